"""The retrieval evaluation's embedding stages and LoCoMo's few-turns loading (issue 28).

The stages are measured on a cut of the hand-written meaning set (its first entities and the
questions they answer), small enough to embed in a second; the loading on a made-up
conversation in LoCoMo's v2 layout, since LoCoMo itself is never in the repository.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks.retrieval.__main__ import main
from benchmarks.retrieval.evaluate import Report, evaluate, missing_meaning_search
from benchmarks.retrieval.locomo import load_locomo
from benchmarks.retrieval.sets import FIXTURES, EvalSet, load_fixture_set
from benchmarks.retrieval.stages import parse_stages, stage_target

meaning_search = pytest.mark.skipif(missing_meaning_search() is not None, reason=str(missing_meaning_search()))

KEPT_ENTITIES = 40


@pytest.fixture(scope="module")
def small_meaning(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The meaning set's first entities, their relations, and the questions only they answer."""
    document: dict[str, Any] = json.loads((FIXTURES / "meaning.json").read_text(encoding="utf-8"))
    entities = document["entities"][:KEPT_ENTITIES]
    names = {item["name"] for item in entities}
    cut = {
        "entities": entities,
        "relations": [item for item in document["relations"] if {item["from"], item["to"]} <= names],
        "questions": [item for item in document["questions"] if set(item["answers"]) <= names],
    }
    path = tmp_path_factory.mktemp("meaning") / "meaning.json"
    path.write_text(json.dumps(cut), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def small_set(small_meaning: Path) -> EvalSet:
    eval_set = load_fixture_set(small_meaning, "meaning (cut)")
    assert len(eval_set.memories[0].questions) >= 20  # enough for semantic search to find something
    return eval_set


@pytest.fixture(scope="module")
def staged(small_set: EvalSet) -> Report:
    return evaluate(small_set, stages=(0, 50, 100))


def _overall(report: Report, percent: int, mode: str) -> float:
    stage = next(stage for stage in report.stages if stage.percent == percent)
    return float(stage.modes[mode].summary()["overall"]["recall@10"])


@meaning_search
def test_each_stage_embeds_its_share_of_the_waiting_texts(staged: Report):
    waiting = staged.stages[0].waiting
    assert waiting > KEPT_ENTITIES  # every entity's name and every observation wait
    assert [stage.embedded for stage in staged.stages] == [0, stage_target(waiting, 50), waiting]


@meaning_search
def test_semantic_search_finds_nothing_before_anything_is_embedded_and_more_as_more_is(staged: Report):
    assert _overall(staged, 0, "semantic") == 0.0
    assert 0.0 < _overall(staged, 50, "semantic") < _overall(staged, 100, "semantic")


@meaning_search
def test_the_last_stage_scores_what_a_fully_embedded_memory_scores(staged: Report, small_set: EvalSet):
    full = evaluate(small_set)
    # Texts embedded in other batches are padded in other groups, so a vector may differ in its
    # last float bits and, stored as int8, swap two near ties: one question's worth of leeway.
    leeway = 1 / len(small_set.memories[0].questions)
    for mode in ("lexical", "semantic", "hybrid"):
        served, staged_row = full.modes[mode].summary()["overall"], staged.modes[mode].summary()["overall"]
        for key in ("recall@5", "recall@10", "mrr"):
            assert staged_row[key] == pytest.approx(served[key], abs=leeway), (mode, key)


@meaning_search
def test_lexical_search_is_the_same_at_every_stage_and_hybrid_is_lexical_at_stage_0(staged: Report):
    lexical = {_overall(staged, stage.percent, "lexical") for stage in staged.stages}
    assert len(lexical) == 1
    assert _overall(staged, 0, "hybrid") == lexical.pop()


@meaning_search
def test_the_command_reports_a_table_per_stage_and_a_summary(small_meaning: Path, capsys: pytest.CaptureFixture[str]):
    main(["--set", "meaning", str(small_meaning), "--stages", "100,0", "--mode", "lexical", "semantic", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [stage["stage"] for stage in data["stages"]] == [0, 100]
    assert [row["stage"] for row in data["summary"]] == [0, 100]
    assert data["summary"][0]["semantic"]["recall@5"] == 0.0
    assert set(data["summary"][1]) == {"stage", "lexical", "semantic"}
    main(["--set", "meaning", str(small_meaning), "--stages", "0,100", "--mode", "lexical"])
    table = capsys.readouterr().out
    assert "stage 0%: 0 of " in table
    assert "overall recall by stage" in table


def test_stages_are_read_as_whole_percentages_in_rising_order():
    assert parse_stages("100,0,25,50,25") == (0, 25, 50, 100)
    for wrong in ("", "101", "-5", "half", "25.5"):
        with pytest.raises(ValueError):
            parse_stages(wrong)


def test_the_command_refuses_a_stage_over_100(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["--stages", "0,150"])
    assert "not a whole percentage" in capsys.readouterr().err


# -- LoCoMo loaded a few turns per entity ---------------------------------------------------


def _turns(session: int, speakers: list[str]) -> list[dict[str, str]]:
    return [
        {"speaker": speaker, "dia_id": f"D{session}:{turn}", "text": f"line {turn} of session {session}"}
        for turn, speaker in enumerate(speakers, start=1)
    ]


def _conversation(qa: list[dict[str, Any]]) -> dict[str, Any]:
    """A conversation in the locomo10_v2 layout: sessions, their dates and the questions at the top."""
    return {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": _turns(1, ["Caroline", "Melanie"] * 3 + ["Caroline"]),
        "session_2_date_time": "1:14 pm on 25 May, 2023",
        "session_2": _turns(2, ["Melanie", "Caroline"]),
        "qa": qa,
    }


QUESTIONS = [
    {"question": "What did Caroline say first?", "answer": "a", "evidence": ["D1:1"], "category": 4},
    {"question": "What came after?", "answer": "b", "evidence": ["D1:4", "D1:7", "D2:2"], "category": 1},
    {"question": "When?", "answer": "c", "evidence": ["D1:5", "D1:6"], "category": 2},
    {"question": "Never said?", "answer": "d", "evidence": ["D2:1"], "category": 5},
]


def _folder(tmp_path: Path, count: int = 1) -> Path:
    folder = tmp_path / "locomo10_v2"
    folder.mkdir()
    for number in range(count):
        qa = [{**item, "question": f"{item['question']} (conversation {number})"} for item in QUESTIONS]
        (folder / f"{number + 26}.json").write_text(json.dumps(_conversation(qa)), encoding="utf-8")
    return folder


def test_few_turns_makes_an_entity_of_each_run_of_turns_in_a_session(tmp_path: Path):
    memory = load_locomo(_folder(tmp_path), "few-turns").memories[0]
    assert [entity.name for entity in memory.entities] == [
        "session 1, turns 1-3",
        "session 1, turns 4-6",
        "session 1, turn 7",
        "session 2, turns 1-2",
    ]
    first = memory.entities[0]
    assert first.entity_type == "conversation excerpt"
    assert first.observations == (
        "Caroline: line 1 of session 1",
        "Melanie: line 2 of session 1",
        "Caroline: line 3 of session 1",
        "Date: 1:56 pm on 8 May, 2023",
    )
    assert memory.entities[3].observations[-1] == "Date: 1:14 pm on 25 May, 2023"


def test_few_turns_maps_each_evidence_turn_to_the_entity_holding_it(tmp_path: Path):
    questions = load_locomo(_folder(tmp_path), "few-turns").memories[0].questions
    assert [(question.answers, question.category) for question in questions] == [
        (("session 1, turns 1-3",), "single-hop"),
        (("session 1, turns 4-6", "session 1, turn 7", "session 2, turns 1-2"), "multi-hop"),
        (("session 1, turns 4-6",), "temporal"),  # two turns of one entity: one answer
    ]


def test_few_turns_takes_the_number_of_turns_per_entity_it_is_given(tmp_path: Path):
    eval_set = load_locomo(_folder(tmp_path), "few-turns", turns_per_entity=4, adversarial=True)
    memory = eval_set.memories[0]
    assert [entity.name for entity in memory.entities] == [
        "session 1, turns 1-4",
        "session 1, turns 5-7",
        "session 2, turns 1-2",
    ]
    assert memory.questions[-1].answers == ("session 2, turns 1-2",)
    assert eval_set.name == "locomo (few-turns, 4 turns per entity)"


def test_a_half_keeps_the_first_or_the_last_conversations(tmp_path: Path):
    folder = _folder(tmp_path, count=3)

    def asked(half: str) -> list[str]:
        eval_set = load_locomo(folder, "sessions", half=half)
        return [memory.questions[0].text[-2] for memory in eval_set.memories]

    assert asked("first") == ["0", "1"]
    assert asked("second") == ["2"]
    assert asked("all") == ["0", "1", "2"]


def test_loading_refuses_an_unknown_half_or_no_turns_per_entity(tmp_path: Path):
    folder = _folder(tmp_path)
    with pytest.raises(ValueError):
        load_locomo(folder, "few-turns", half="middle")
    with pytest.raises(ValueError):
        load_locomo(folder, "few-turns", turns_per_entity=0)
