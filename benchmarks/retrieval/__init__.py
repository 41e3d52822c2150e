"""Retrieval evaluation for search by meaning (issue 17): recall and MRR of search_nodes per mode.

    python -m benchmarks.retrieval                         # the hand-written meaning set
    python -m benchmarks.retrieval --set quality           # tests/fixtures/search/quality.json
    python -m benchmarks.retrieval --set locomo /tmp/locomo10.json --as sessions
    python -m benchmarks.retrieval --set locomo PATH --as few-turns --stages 0,25,50,100 --half second
    python -m benchmarks.retrieval --json

Each set is loaded into a fresh SQLite memory in a temporary directory, everything is
embedded, and every question is asked once per mode (`lexical`, `semantic`, `hybrid`) as
`search_nodes(question, limit=10, mode=...)`. With `--stages 0,25,50,100` each memory is
asked at each stage of being embedded (0 %: nothing has a vector yet, as just after a write;
100 %: everything), one table per stage and a summary of overall recall by stage at the end.
Modules: `sets` (what is asked and what answers it), `evaluate` (loading, embedding, asking,
scoring), `stages` (how far a memory is embedded when it is asked), `locomo` (the public
long-conversation benchmark, read from a file that is never committed; three ways of loading
it, and halves), `__main__` (the command and its tables), `tune` (fusion variants scored
offline on halves of LoCoMo and on the hand-written sets: `python -m benchmarks.retrieval.tune PATH`).
"""
