"""The rules of the memory: plain synchronous Python over a `Store`, with no protocol in sight.

    graph.py             KnowledgeGraph: the official operations, dedup, cascade, versions
    observations.py      observations as records with ids, metadata and history
    observation_text.py  what an observation's text says about itself (its prefixes)
    saving.py            save_memory: entities, facts and relations saved whole or not at all
    analytics.py         what state a memory is in, for one thread or all
    search.py            search policy: what a query looks for, and the order of the answer
    lookup.py            structured look-ups of entities by type, importance, times, thread
    navigation.py        entities by name or alias, and the relations around them
    traversal.py         how entities connect: neighbours, paths, subgraphs
    maintenance.py       keeping a memory tidy: update, rename, upsert, merge, compact
    context.py           context about named entities, for a model
    diagrams.py          the memory as Mermaid, Graphviz DOT or GraphML

Modules here are named for what they decide; the tool modules of the same names in
`graphmem.tools` are named for what they expose, and call these.
"""
