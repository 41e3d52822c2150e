"""Projects as the graph keeps them: what each scope sees, where writes go, and the rules at the
boundary (graphmem.domain.projects), on every backend."""

from __future__ import annotations

import pytest

from graphmem.config import Settings
from graphmem.core.errors import AmbiguousNameError, ProjectConflictError
from graphmem.core.models import Entity, ObservationAddition, Relation
from graphmem.core.projects import EVERY, Scope
from graphmem.domain import projects
from graphmem.domain.graph import KnowledgeGraph
from graphmem.domain.maintenance import merge_entities

API, TOOL = Scope("github.com/acme/api"), Scope("tool")


@pytest.fixture
def settings(any_backend_settings: Settings) -> Settings:
    return any_backend_settings


def _names(graph: KnowledgeGraph, scope: Scope) -> list[str]:
    with graph.working_in(scope):
        return [entity.name for entity in graph.read_graph().entities]


def _fill(graph: KnowledgeGraph) -> None:
    graph.create_entities([Entity("Alice", "person", ("reviews code",))])
    with graph.working_in(API):
        graph.create_entities([Entity("README", "file", ("explains the api",)), Entity("server", "service")])
        graph.create_relations([Relation("Alice", "README", "wrote"), Relation("README", "server", "describes")])
    with graph.working_in(TOOL):
        graph.create_entities([Entity("README", "file", ("explains the tool",))])
        graph.create_relations([Relation("Alice", "README", "wrote")])


def test_what_a_project_writes_only_it_sees_and_the_shared_space_every_project_sees(graph: KnowledgeGraph):
    _fill(graph)
    assert _names(graph, API) == ["Alice", "README", "server"]
    assert _names(graph, TOOL) == ["Alice", "README"]
    with graph.working_in(TOOL):
        (readme,) = graph.open_nodes(["README"]).entities
        assert readme.observations == ("explains the tool",)
        assert [relation.key for relation in graph.read_graph().relations] == [("Alice", "README", "wrote")]
        assert graph.search_nodes("explains").entities[0].observations == ("explains the tool",)


def test_a_name_in_two_projects_is_refused_by_a_write_that_sees_both(graph: KnowledgeGraph):
    _fill(graph)
    assert sorted(entity.project for entity in graph.open_nodes(["README"]).entities) == [API.home, TOOL.home]
    with pytest.raises(AmbiguousNameError, match="'README' is an entity in more than one project"):
        graph.add_observations([ObservationAddition("README", ("more",))])
    with pytest.raises(AmbiguousNameError):
        graph.delete_entities(["README"])
    with graph.working_in(API):
        graph.add_observations([ObservationAddition("README", ("more",))])
        assert graph.open_nodes(["README"]).entities[0].observations == ("explains the api", "more")
    with graph.working_in(TOOL):
        assert graph.open_nodes(["README"]).entities[0].observations == ("explains the tool",)


def test_a_shared_name_is_one_entity_everywhere(graph: KnowledgeGraph):
    _fill(graph)
    with graph.working_in(API):
        created = graph.create_entities([Entity("Alice", "person", ("a second Alice",))])
        assert created.skipped == ("Alice",)
    # Across every project, a name a project holds exists too: it cannot become shared twice.
    assert graph.create_entities([Entity("server", "service")]).skipped == ("server",)


def test_a_relation_across_two_projects_is_refused(graph: KnowledgeGraph):
    _fill(graph)
    with graph.working_in(TOOL):
        graph.create_entities([Entity("cli", "program")])
    with pytest.raises(ProjectConflictError, match="different projects"):
        graph.create_relations([Relation("server", "cli", "calls")])
    # With one end shared, the relation goes to the other end's project.
    graph.create_relations([Relation("Alice", "cli", "maintains")])
    with graph.working_in(TOOL):
        assert ("Alice", "cli", "maintains") in {relation.key for relation in graph.read_graph().relations}
    with graph.working_in(API):
        assert ("Alice", "cli", "maintains") not in {relation.key for relation in graph.read_graph().relations}


def test_entities_move_to_the_shared_space_unless_another_project_holds_the_name(graph: KnowledgeGraph):
    _fill(graph)
    with graph.working_in(API):
        moved = projects.move(graph, ["server"], "")
        assert (moved.moved, moved.missing) == (("server",), ())
        with pytest.raises(ProjectConflictError, match="twice"):
            projects.move(graph, ["README"], "")
    assert "server" in _names(graph, TOOL)
    # The project's relation to it stays the project's, and still finds it.
    with graph.working_in(API):
        assert ("README", "server", "describes") in {relation.key for relation in graph.read_graph().relations}


def test_a_shared_entity_another_project_relates_to_does_not_leave_for_a_project(graph: KnowledgeGraph):
    _fill(graph)
    with graph.working_in(API), pytest.raises(ProjectConflictError, match="name nothing there"):
        projects.move(graph, ["Alice"], API.home)
    assert "Alice" in _names(graph, TOOL)


def test_merges_that_would_lose_another_project_s_relations_are_refused(graph: KnowledgeGraph):
    _fill(graph)
    # From one project, a shared entity cannot follow every project's relations.
    with graph.working_in(API), pytest.raises(ProjectConflictError, match="this call sees one project"):
        merge_entities(graph, "Alice", "server")
    # Across every project: into a project's entity it would vanish from the others.
    with pytest.raises(ProjectConflictError, match="move it into the project first"):
        merge_entities(graph, "Alice", "server")
    with graph.working_in(TOOL):
        graph.create_entities([Entity("cli", "program")])
    with pytest.raises(ProjectConflictError, match="its relations would name nothing"):
        merge_entities(graph, "server", "cli")
    assert "Alice" in _names(graph, TOOL) and "server" in _names(graph, API)


def test_a_relation_two_projects_hold_is_refused_by_a_write_that_sees_both(graph: KnowledgeGraph):
    _fill(graph)
    with pytest.raises(AmbiguousNameError, match="Alice -wrote-> README"):
        graph.delete_relations([Relation("Alice", "README", "wrote")])
    with graph.working_in(TOOL):
        assert graph.delete_relations([Relation("Alice", "README", "wrote")]).deleted == 1
    with graph.working_in(API):
        assert ("Alice", "README", "wrote") in {relation.key for relation in graph.read_graph().relations}


def test_a_shared_name_stays_one_entity_when_made_in_the_shared_space(graph: KnowledgeGraph):
    _fill(graph)
    with graph.working_in(Scope("")):
        assert graph.create_entities([Entity("server", "service")]).skipped == ("server",)
    assert [entity.project for entity in graph.open_nodes(["server"]).entities] == [API.home]


def test_projects_are_listed_with_their_counts_and_deleted_whole(graph: KnowledgeGraph):
    _fill(graph)
    listed = {counts.project: (counts.entities, counts.relations) for counts in projects.list_projects(graph)}
    assert listed == {"": (1, 0), API.home: (2, 2), TOOL.home: (1, 1)}
    assert projects.delete_project(graph, API.home) == (2, 2)
    assert _names(graph, EVERY) == ["Alice", "README"]
    with pytest.raises(ProjectConflictError):
        projects.delete_project(graph, "")
