"""The nine tools of the official memory server, listed exactly as it lists them.

Names, titles, schemas and annotations match the official `tools/list`; each
description keeps the official first sentence and adds when to use the tool rather
than its sibling.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from graphmem.core.limits import Limits
from graphmem.core.models import DeleteOutcome, Entity, Graph, ObservationAddition, ObservationDeletion, Relation
from graphmem.domain.duplicates import duplicates_of
from graphmem.domain.fusion import SEARCH_MODES
from graphmem.domain.graph import RankedNames
from graphmem.domain.search import RANKED_AT_MOST
from graphmem.tools import schemas
from graphmem.tools.base import (
    DELETE,
    OFFICIAL_EXECUTION,
    READ,
    WRITE,
    Omittable,
    ToolArgs,
    ToolContext,
    ToolOutput,
    ToolSpec,
    dump_json,
    plural,
)
from graphmem.tools.budget import (
    SMALLEST_ENTITY,
    SMALLEST_OUTLINE,
    Fitted,
    cut_note,
    fit_graph,
    fit_items,
    most_that_fit,
)
from graphmem.tools.clash_notes import clash_note
from graphmem.tools.duplicate_notes import duplicate_note
from graphmem.tools.reading import (
    SMALL_MEMORY,
    bounded_graph_output,
    first_read,
    head_that_fits,
    output_if_it_fits,
    ranked_that_fit,
)

__all__ = ["OFFICIAL_TOOLS"]


_LIMITS = Limits()


class _EntityArg(ToolArgs):
    name: str
    entity_type: str = Field(alias="entityType")
    observations: list[str]


class _RelationArg(ToolArgs):
    from_: str = Field(alias="from")
    to: str
    relation_type: str = Field(alias="relationType")

    def model(self) -> Relation:
        return Relation(self.from_, self.to, self.relation_type)


class _CreateEntitiesArgs(ToolArgs):
    entities: list[_EntityArg]


class _RelationsArgs(ToolArgs):
    relations: list[_RelationArg]


class _AdditionArg(ToolArgs):
    entity_name: str = Field(alias="entityName")
    contents: list[str]
    supersedes: list[str | None] = Field(default_factory=list)
    attribute: Omittable[str] = None
    valid_from: Omittable[str] = Field(default=None, alias="validFrom")
    valid_until: Omittable[str] = Field(default=None, alias="validUntil")

    @model_validator(mode="after")
    def _one_per_content(self) -> _AdditionArg:
        if self.supersedes and len(self.supersedes) != len(self.contents):
            raise ValueError(
                f"supersedes has {len(self.supersedes)} items for {len(self.contents)} contents; give one per "
                'content, in order ("" or null for a new fact), or leave supersedes out'
            )
        return self

    @field_validator("supersedes")
    @classmethod
    def _empty_is_new(cls, supersedes: list[str | None]) -> list[str | None]:
        # "" is how a schema of one type per property says "a new fact"; null says it too.
        return [replaced or None for replaced in supersedes]


class _AddObservationsArgs(ToolArgs):
    observations: list[_AdditionArg]


class _DeleteEntitiesArgs(ToolArgs):
    entity_names: list[str] = Field(alias="entityNames")


class _DeletionArg(ToolArgs):
    entity_name: str = Field(alias="entityName")
    observations: list[str]


class _DeleteObservationsArgs(ToolArgs):
    deletions: list[_DeletionArg]


class _ReadGraphArgs(ToolArgs):
    entity_type: Omittable[str] = Field(default=None, alias="entityType")
    offset: int = Field(default=0, ge=0, le=_LIMITS.max_offset)
    limit: Omittable[int] = Field(default=None, ge=1, le=_LIMITS.max_offset)
    mode: Literal["full", "names", "summary"] = "full"

    @property
    def paged(self) -> bool:
        return self.entity_type is not None or self.offset > 0 or self.limit is not None


class _SearchArgs(ToolArgs):
    # Ranges are checked by the graph, which words the error for the model.
    query: str | list[str]
    entity_type: Omittable[str] = Field(default=None, alias="entityType")
    limit: Omittable[int] = None
    offset: int = 0
    mode: Literal["hybrid", "lexical", "semantic"] = "hybrid"


class _OpenArgs(ToolArgs):
    names: list[str]


def _delete_result(message: str, outcome: DeleteOutcome) -> ToolOutput:
    return ToolOutput({"success": True, "message": message}, message, changed=True, deleted=outcome)


# -- the nine official tools ---------------------------------------------------


def create_entities(ctx: ToolContext, args: _CreateEntitiesArgs) -> ToolOutput:
    result = ctx.graph.create_entities(
        [Entity(item.name, item.entity_type, tuple(item.observations)) for item in args.entities]
    )
    created = [entity.to_wire() for entity in result.created]
    structured: dict[str, Any] = {"entities": created}
    notes: tuple[str, ...] = ()
    if result.skipped:
        structured["skipped"] = list(result.skipped)
        count = len(result.skipped)
        names = ", ".join(result.skipped)
        if count == 1:
            notes = (
                f"Skipped 1 entity that already exists: {names}. Its observations were not added; "
                "use add_observations for existing entities.",
            )
        else:
            notes = (
                f"Skipped {count} entities that already exist: {names}. Their observations were not "
                "added; use add_observations for existing entities.",
            )
    duplicated = duplicate_note(duplicates_of(ctx.graph, result.created))
    if duplicated is not None:
        notes = (*notes, duplicated)
    return ToolOutput(structured, dump_json(created), notes, changed=True)


def create_relations(ctx: ToolContext, args: _RelationsArgs) -> ToolOutput:
    result = ctx.graph.create_relations([item.model() for item in args.relations])
    created = [relation.to_wire() for relation in result.created]
    notes: tuple[str, ...] = ()
    if result.missing_entities:
        count = len(result.missing_entities)
        noun = plural(count, "entity that does not exist", "entities that do not exist")
        notes = (
            f"Saved, but the relations refer to {count} {noun}: {', '.join(result.missing_entities)}. "
            "Create them with create_entities so the relations connect real nodes.",
        )
    return ToolOutput({"relations": created}, dump_json(created), notes, changed=True)


def add_observations(ctx: ToolContext, args: _AddObservationsArgs) -> ToolOutput:
    results = ctx.graph.add_observations(
        [
            ObservationAddition(
                item.entity_name,
                tuple(item.contents),
                tuple(item.supersedes),
                item.attribute,
                item.valid_from,
                item.valid_until,
            )
            for item in args.observations
        ]
    )
    wire = [result.to_wire() for result in results]
    note = clash_note([(result.entity_name, clash) for result in results for clash in result.clashes])
    return ToolOutput({"results": wire}, dump_json(wire), () if note is None else (note,), changed=True)


def delete_entities(ctx: ToolContext, args: _DeleteEntitiesArgs) -> ToolOutput:
    outcome = ctx.graph.delete_entities(args.entity_names)
    if not outcome.missing_entities:
        return _delete_result("Entities deleted successfully", outcome)
    missing = ", ".join(outcome.missing_entities)
    return _delete_result(f"Deleted {outcome.deleted} of {outcome.requested} entities. Not found: {missing}", outcome)


def delete_observations(ctx: ToolContext, args: _DeleteObservationsArgs) -> ToolOutput:
    outcome = ctx.graph.delete_observations(
        [ObservationDeletion(item.entity_name, tuple(item.observations)) for item in args.deletions]
    )
    if outcome.deleted == outcome.requested and not outcome.missing_entities:
        return _delete_result("Observations deleted successfully", outcome)
    message = f"Deleted {outcome.deleted} of {outcome.requested} observations."
    if outcome.missing_entities:
        message += f" Entities not found: {', '.join(outcome.missing_entities)}"
    return _delete_result(message, outcome)


def delete_relations(ctx: ToolContext, args: _RelationsArgs) -> ToolOutput:
    outcome = ctx.graph.delete_relations([item.model() for item in args.relations])
    if outcome.deleted == outcome.requested:
        return _delete_result("Relations deleted successfully", outcome)
    return _delete_result(
        f"Deleted {outcome.deleted} of {outcome.requested} relations. The rest matched nothing.", outcome
    )


_READ_GRAPH_MORE = (
    "Call read_graph with offset={next} and a limit for the next entities, narrow it with entityType, or use "
    'mode "names" for a short list of every entity; search_nodes finds entities by what they hold.'
)


def _requested(total: int, offset: int, limit: int | None) -> int:
    """How many entities a page asks for, given how many match."""
    available = max(total - offset, 0)
    return available if limit is None else min(limit, available)


def _capped(limit: int | None, cap: int | None) -> int | None:
    if cap is None:
        return limit
    return cap if limit is None else min(limit, cap)


def read_graph(ctx: ToolContext, args: _ReadGraphArgs) -> ToolOutput:
    if args.mode != "full":
        return _read_outlines(ctx, args)
    # Fetch no more entities than the budget could show, whatever the memory's size.
    cap = most_that_fit(ctx.response_budget, SMALLEST_ENTITY)
    if not args.paged:
        # The plain call answers exactly as the official server when it fits; a small
        # memory (the usual one) is written straight from the store, and measured.
        wire = ctx.graph.official_graph(SMALL_MEMORY)
        output = None if wire is None else output_if_it_fits(ctx, wire)
        if output is not None:
            return output
        if cap is None:
            page, fitted = ctx.graph.read_page(None, 0, None), None
        else:
            page, fitted = head_that_fits(ctx, cap)
        return bounded_graph_output(ctx, page.graph, _READ_GRAPH_MORE, requested=page.total_entities, fitted=fitted)
    page = ctx.graph.read_page(args.entity_type, args.offset, _capped(args.limit, cap))
    return bounded_graph_output(
        ctx,
        page.graph,
        _READ_GRAPH_MORE,
        offset=args.offset,
        requested=_requested(page.total_entities, args.offset, args.limit),
        extra={"totalEntities": page.total_entities},
    )


def _read_outlines(ctx: ToolContext, args: _ReadGraphArgs) -> ToolOutput:
    cap = most_that_fit(ctx.response_budget, SMALLEST_OUTLINE)
    page = ctx.graph.outline_page(
        args.entity_type, args.offset, _capped(args.limit, cap), count_relations=args.mode == "summary"
    )
    items: list[dict[str, Any]]
    if args.mode == "names":
        items = [{"name": item.name, "entityType": item.entity_type} for item in page.outlines]
    else:
        items = [
            {
                "name": item.name,
                "entityType": item.entity_type,
                "observationCount": item.observation_count,
                "relationCount": item.relation_count,
            }
            for item in page.outlines
        ]
    kept = fit_items(items, ctx.response_budget)
    wire: dict[str, Any] = {args.mode: items[:kept], "totalEntities": page.total_entities}
    omitted = _requested(page.total_entities, args.offset, args.limit) - kept
    notes: tuple[str, ...] = ()
    if omitted > 0:
        next_offset = args.offset + kept
        wire["truncated"] = {"omittedEntities": omitted, "nextOffset": next_offset}
        how = f'Call read_graph with mode "{args.mode}", offset={next_offset} and a limit for the next ones.'
        notes = (cut_note(kept, omitted, ctx.response_budget, how),)
    return ToolOutput(wire, dump_json(wire), notes)


def search_nodes(ctx: ToolContext, args: _SearchArgs) -> ToolOutput:
    output, ranked = _search_nodes(ctx, args)
    if not ranked.partly_embedded:
        return output
    # Structured only: the text stays the official answer.
    return replace(output, structured={**output.structured, "partlyEmbedded": True})


def _search_nodes(ctx: ToolContext, args: _SearchArgs) -> tuple[ToolOutput, RankedNames]:
    if args.limit is None and ctx.search_budget is not None:
        # Asked without a limit, the answer is sized for an agent's context, not the whole budget.
        ctx = replace(ctx, response_budget=ctx.search_budget)

    def rank(named_at_most: int | None) -> RankedNames:
        return ctx.graph.rank_search(
            args.query,
            entity_type=args.entity_type,
            limit=args.limit,
            offset=args.offset,
            named_at_most=named_at_most,
            mode=args.mode,
        )

    # Rank and name no more entities than the budget could show, however many match: at
    # first twice what the memory's counts say it shows (naming the 2,000 a common word
    # finds costs more than ranking them), then all it could show if the names ran out first.
    cap = most_that_fit(ctx.response_budget, SMALLEST_ENTITY)
    named = None if cap is None else min(cap, 2 * first_read(ctx, cap))
    ranked = rank(named)
    loaded: tuple[Graph, Fitted | None] | None = None
    if cap is not None and named is not None and named < cap and len(ranked.names) < ranked.total:
        loaded = ranked_that_fit(ctx, ranked.names)
        if loaded[1] is None or not loaded[1].cut:
            ranked, loaded = rank(cap), None
    if loaded is None and len(ranked.names) == ranked.total and not ranked.more:
        # A small memory (the usual one): the answer is picked from the whole graph's wire
        # form, as read_graph's is, when it fits.
        wire = ctx.graph.official_subgraph(ranked.names, SMALL_MEMORY)
        output = None if wire is None else output_if_it_fits(ctx, wire)
        if output is not None:
            return output, ranked
    graph, fitted = loaded if loaded is not None else ranked_that_fit(ctx, ranked.names)
    if fitted is None and len(graph.entities) == ranked.total and not ranked.more:
        output = output_if_it_fits(ctx, graph.to_wire())
        if output is not None:
            return output, ranked
    if fitted is None:
        fitted = fit_graph(graph, ctx.response_budget)
    wire = fitted.graph.to_wire()
    kept = list(dict.fromkeys(entity.name for entity in fitted.graph.entities))
    if not fitted.cut and len(kept) == ranked.total and not ranked.more:
        return ToolOutput(wire, dump_json(wire)), ranked
    # The answer is ranked by name; a cut between two entities sharing a name (a JSONL
    # file may hold such twins) shows that name again on the next page.
    if fitted.cut and any(entity.name == kept[-1] for entity in graph.entities[len(fitted.graph.entities) :]):
        kept.pop()
    next_offset = args.offset + len(kept)
    omitted = ranked.total - len(kept)
    more = f"limit {args.limit}" if args.limit is not None else "a limit"
    how = (
        f"Call search_nodes again with offset {next_offset} (and {more}) to get the next ones, "
        "or narrow the search with entityType or a more specific query."
    )
    truncated: dict[str, Any] = {"omittedEntities": omitted, "nextOffset": next_offset}
    if ranked.more:
        truncated["atLeast"] = True
    note = _search_cut_note(len(kept), ranked, ctx.response_budget, how)
    return ToolOutput({**wire, "truncated": truncated}, dump_json(wire), (note,)), ranked


def _search_cut_note(shown: int, ranked: RankedNames, budget_tokens: int, how: str) -> str:
    """What a cut search answer tells the model: how many it shows of how many, and how to go on."""
    if not ranked.more:
        return cut_note(shown, ranked.total - shown, budget_tokens, how)
    return (
        f"Showing {shown} of at least {ranked.total:,} entities that contain the query, the most recent "
        f"first: past {RANKED_AT_MOST:,} matches they are not ranked by score or counted to the end. The "
        f"others were left out to keep this answer within the response budget of about {budget_tokens:,} "
        f"tokens. {how}"
    )


def open_nodes(ctx: ToolContext, args: _OpenArgs) -> ToolOutput:
    how = "Call open_nodes again with the names that were left out, a few at a time."
    return bounded_graph_output(ctx, ctx.graph.open_nodes(args.names), how)


_NAMES = {"type": "array", "items": {"type": "string"}}

# The documented defaults; the graph enforces the limits it was given.

OFFICIAL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="create_entities",
        title="Create Entities",
        description=(
            "Create multiple new entities in the knowledge graph. "
            "For things not yet in memory; a name that exists is skipped: use add_observations for it."
        ),
        input_schema=schemas.input_schema({"entities": {"type": "array", "items": schemas.ENTITY}}, ["entities"]),
        output_schema=schemas.output_schema(
            {
                "entities": {"type": "array", "items": schemas.closed(schemas.ENTITY)},
                "skipped": {"type": "array", "items": {"type": "string"}},
            },
            ["entities"],
        ),
        annotations=WRITE,
        arguments=_CreateEntitiesArgs,
        run=create_entities,
        execution=OFFICIAL_EXECUTION,
    ),
    ToolSpec(
        name="create_relations",
        title="Create Relations",
        description=(
            "Create multiple new relations between entities in the knowledge graph. Relations should "
            "be in active voice. Create both entities first."
        ),
        input_schema=schemas.input_schema({"relations": {"type": "array", "items": schemas.RELATION}}, ["relations"]),
        output_schema=schemas.output_schema(
            {"relations": {"type": "array", "items": schemas.closed(schemas.RELATION)}}, ["relations"]
        ),
        annotations=WRITE,
        arguments=_RelationsArgs,
        run=create_relations,
        execution=OFFICIAL_EXECUTION,
    ),
    ToolSpec(
        name="add_observations",
        title="Add Observations",
        description=(
            "Add new observations to existing entities in the knowledge graph. "
            "For new facts about entities in memory; to correct a fact, give the replaced one's id in supersedes."
        ),
        input_schema=schemas.input_schema(
            {
                "observations": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "entityName": {
                                "type": "string",
                                "description": "The name of the entity to add the observations to",
                            },
                            "contents": {
                                **_NAMES,
                                "description": "An array of observation contents to add",
                            },
                            # One type per property: clients that map schemas to a single-type
                            # dialect (Gemini, OpenAPI 3.0) reject ["string", "null"]. A null is
                            # still taken, as it always was.
                            "supersedes": {
                                "type": "array",
                                "items": {"type": "string"},
                                "description": 'One per content: the id of the fact it corrects, or "" for a new fact',
                            },
                            "attribute": {
                                "type": "string",
                                "description": "What the one content sets (employer): it replaces the current value",
                            },
                            "validFrom": {"type": "string", "description": "Holds from (date)"},
                            "validUntil": {"type": "string", "description": "Holds until (date, included)"},
                        },
                        "required": ["entityName", "contents"],
                    },
                }
            },
            ["observations"],
        ),
        output_schema=schemas.output_schema(
            {
                "results": {
                    "type": "array",
                    "items": schemas.closed(
                        {
                            "type": "object",
                            "properties": {"entityName": {"type": "string"}, "addedObservations": _NAMES},
                            "required": ["entityName", "addedObservations"],
                        }
                    ),
                }
            },
            ["results"],
        ),
        annotations=WRITE,
        arguments=_AddObservationsArgs,
        run=add_observations,
        execution=OFFICIAL_EXECUTION,
    ),
    ToolSpec(
        name="delete_entities",
        title="Delete Entities",
        description=(
            "Delete multiple entities and their associated relations from the knowledge graph. "
            "To forget whole entities; delete_observations removes single facts."
        ),
        input_schema=schemas.input_schema(
            {"entityNames": {**_NAMES, "description": "An array of entity names to delete"}}, ["entityNames"]
        ),
        output_schema=schemas.DELETE_RESULT,
        annotations=DELETE,
        arguments=_DeleteEntitiesArgs,
        run=delete_entities,
        execution=OFFICIAL_EXECUTION,
    ),
    ToolSpec(
        name="delete_observations",
        title="Delete Observations",
        description=(
            "Delete specific observations from entities in the knowledge graph. "
            "For wrong or outdated facts; texts must match exactly."
        ),
        input_schema=schemas.input_schema(
            {
                "deletions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "entityName": {
                                "type": "string",
                                "description": "The name of the entity containing the observations",
                            },
                            "observations": {**_NAMES, "description": "An array of observations to delete"},
                        },
                        "required": ["entityName", "observations"],
                    },
                }
            },
            ["deletions"],
        ),
        output_schema=schemas.DELETE_RESULT,
        annotations=DELETE,
        arguments=_DeleteObservationsArgs,
        run=delete_observations,
        execution=OFFICIAL_EXECUTION,
    ),
    ToolSpec(
        name="delete_relations",
        title="Delete Relations",
        description=(
            "Delete multiple relations from the knowledge graph. "
            "For wrong links; from, to and relationType must match exactly."
        ),
        input_schema=schemas.input_schema(
            {
                "relations": {
                    "type": "array",
                    "items": schemas.RELATION,
                    "description": "An array of relations to delete",
                }
            },
            ["relations"],
        ),
        output_schema=schemas.DELETE_RESULT,
        annotations=DELETE,
        arguments=_RelationsArgs,
        run=delete_relations,
        execution=OFFICIAL_EXECUTION,
    ),
    ToolSpec(
        name="read_graph",
        title="Read Graph",
        description=(
            "Read the entire knowledge graph. "
            "To review a memory (a large one by pages, or with mode names); search_nodes and open_nodes "
            "answer smaller."
        ),
        input_schema=schemas.READ_GRAPH_INPUT,
        output_schema=schemas.READ_GRAPH_RESULT,
        annotations=READ,
        arguments=_ReadGraphArgs,
        run=read_graph,
        execution=OFFICIAL_EXECUTION,
        reusable=True,
    ),
    ToolSpec(
        name="search_nodes",
        title="Search Nodes",
        description=(
            "Search for nodes in the knowledge graph based on a query. "
            "When you do not know the exact names: plain words or a question, matched by words and by "
            "meaning, best first; query may also be a list of strings to match any of."
        ),
        input_schema=schemas.input_schema(
            {
                # Listed as the official string, so every client keeps accepting the tool;
                # a list of queries (spec 003) is accepted too, as the description says.
                "query": {
                    "type": "string",
                    "description": "The search query to match against entity names, types, and observation content",
                    "maxLength": _LIMITS.max_query_length,
                },
                "entityType": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": _LIMITS.max_page_size},
                "offset": {"type": "integer", "minimum": 0, "maximum": _LIMITS.max_offset, "default": 0},
                "mode": {"enum": list(SEARCH_MODES), "default": "hybrid"},
                **schemas.PROJECT_ARGUMENT,
                **schemas.AS_OF_ARGUMENT,
            },
            ["query"],
        ),
        output_schema=schemas.SEARCH_RESULT,
        annotations=READ,
        arguments=_SearchArgs,
        run=search_nodes,
        execution=OFFICIAL_EXECUTION,
        reusable=True,
    ),
    ToolSpec(
        name="open_nodes",
        title="Open Nodes",
        description=(
            "Open specific nodes in the knowledge graph by their names. "
            "When you know the exact names, e.g. from search_nodes; with every relation touching them."
        ),
        input_schema=schemas.input_schema(
            {
                "names": {**_NAMES, "description": "An array of entity names to retrieve"},
                **schemas.PROJECT_ARGUMENT,
                **schemas.AS_OF_ARGUMENT,
            },
            ["names"],
        ),
        output_schema=schemas.BOUNDED_GRAPH_RESULT,
        annotations=READ,
        arguments=_OpenArgs,
        run=open_nodes,
        execution=OFFICIAL_EXECUTION,
        reusable=True,
    ),
)
