"""Ranking quality over a realistic catalogue, tiny corpora and filters."""

from __future__ import annotations

import math

import pytest
from pi_toolindex import ToolDocument, ToolIndex, document_for, namespace_key, namespace_keys, namespace_matches
from toolindex_catalogue import GITHUB, TICKETS, catalogue, definition, schema, short

from pi_hookspecs import ToolNamespace


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    built = ToolIndex()
    for tool in catalogue():
        built.add_tool(tool)
    return built


def ranked(index: ToolIndex, query: str, **options: object) -> list[str]:
    return [short(hit.name) for hit in index.search(query, **options)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("create an issue", "create_issue"),
        ("merge the PR", "merge_pull_request"),
        ("list commits on a branch", "list_commits"),
        ("search code", "search_code"),
        ("get the contents of a file", "get_file_contents"),
        ("close issue", "close_issue"),
        ("assign ticket to an agent", "assignTicket"),
        ("comment on a ticket", "ticket_comment"),
        ("add a comment to the issue", "add_issue_comment"),
        ("create a pull request", "create_pull_request"),
        ("escalate an urgent ticket", "setTicketPriority"),
        ("updating issues", "update_issue"),
        ("show the diff of a PR", "get_pull_request_diff"),
        ("fork the repo", "fork_repository"),
        ("mcp__github__list_commits", "list_commits"),
    ],
)
def test_the_best_tool_comes_first(index: ToolIndex, query: str, best: str) -> None:
    assert ranked(index, query)[0] == best


def test_create_an_issue_ranks_create_issue_above_list_issues(index: ToolIndex) -> None:
    names = ranked(index, "create an issue", limit=20)
    assert names.index("create_issue") < names.index("list_issues")


def test_camel_case_names_are_found_by_their_words(index: ToolIndex) -> None:
    assert ranked(index, "ticket history")[0] == "getTicketHistory"
    assert ranked(index, "getTicketHistory")[0] == "getTicketHistory"
    assert ranked(index, "search tickets")[0] == "searchTickets"


def test_namespace_filter_by_name_alias_or_server_part(index: ToolIndex) -> None:
    for namespace in ("tickets", "helpdesk", "mcp__tickets", "MCP__Tickets"):
        names = ranked(index, "create", namespace=namespace, limit=10)
        assert names == ["createTicket"], namespace
    github = index.search("create", namespace="github", limit=10)
    assert github and all(hit.name.startswith("mcp__github__") for hit in github)
    assert {short(h.name) for h in github} >= {"create_issue", "create_pull_request", "create_branch"}
    assert index.search("create", namespace="gitlab") == []


def test_namespace_names_match_with_dashes_or_underscores() -> None:
    index = ToolIndex()
    radius = GITHUB.model_copy(update={"name": "mcp__dev-radius", "aliases": []})
    index.add_tool(definition("mcp__dev-radius__scan", "Scan the network.", schema(), radius))
    for form in ("mcp__dev-radius", "mcp__dev_radius", "dev-radius", "dev_radius"):
        assert [h.name for h in index.search("scan", namespace=form)] == ["mcp__dev-radius__scan"]


def test_the_server_description_helps_pick_its_tools(index: ToolIndex) -> None:
    # "support" appears in the helpdesk server's description, shared by its tools
    hits = index.search("support", limit=30)
    assert len(hits) == 6 and all(hit.name.startswith("mcp__tickets__") for hit in hits)
    assert short(hits[0].name) in ("createTicket", "assignTicket")  # they also say "support" themselves


def test_limit_and_include_filter(index: ToolIndex) -> None:
    assert len(index.search("issue", limit=3)) == 3
    assert index.search("issue", limit=0) == []
    hidden = {"mcp__github__create_issue"}
    names = [h.name for h in index.search("create an issue", include=lambda n: n not in hidden)]
    assert "mcp__github__create_issue" not in names and names


def test_unrelated_or_empty_queries_find_nothing(index: ToolIndex) -> None:
    assert index.search("galaxy spaceship") == []
    assert index.search("the of a") == []
    assert index.search("") == []
    assert index.search("!?") == []


def test_scores_are_positive_and_sorted(index: ToolIndex) -> None:
    hits = index.search("create issue pull request branch", limit=10)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)


def test_a_single_tool_still_ranks_by_relevance() -> None:
    index = ToolIndex()
    index.add("weather", ToolDocument(name="weather", description="Look up the weather forecast for a city."))
    [hit] = index.search("weather in Oslo")
    assert hit.name == "weather" and hit.score > 0
    # idf of a term in the only document: log(1 + 0.5 / 1.5), never zero
    assert index.search("forecast")[0].score > 0
    assert index.search("stock prices") == []


def test_two_tools_rank_by_relevance_even_for_shared_terms() -> None:
    index = ToolIndex()
    index.add("get_weather", ToolDocument(name="get_weather", description="Get the weather for a city."))
    index.add("get_time", ToolDocument(name="get_time", description="Get the local time in a city."))
    assert [h.name for h in index.search("weather")] == ["get_weather"]
    assert [h.name for h in index.search("time")] == ["get_time"]
    both = index.search("get city")  # both tools contain both terms: both found, score > 0
    assert {h.name for h in both} == {"get_weather", "get_time"} and all(h.score > 0 for h in both)
    assert index.search("what time is it in the city")[0].name == "get_time"


def test_idf_formula_on_a_tiny_corpus() -> None:
    index = ToolIndex()
    index.add("a", ToolDocument(description="alpha"))
    index.add("b", ToolDocument(description="beta"))
    [hit] = index.search("alpha")
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    # tf 1, length 1 = average length: tf * (k1 + 1) / (tf + k1) = 1
    assert hit.score == pytest.approx(idf)


def test_field_weights_name_over_description_over_parameters_over_namespace() -> None:
    index = ToolIndex()
    index.add("in_name", ToolDocument(name="deploy", description="Do the thing.", parameters="x y"))
    index.add("in_description", ToolDocument(name="run", description="Deploy the thing.", parameters="x y"))
    index.add("in_parameters", ToolDocument(name="run", description="Do the thing.", parameters="deploy y"))
    index.add(
        "in_namespace", ToolDocument(name="run", description="Do the thing.", parameters="x y", namespace="deploy")
    )
    assert [h.name for h in index.search("deploy", limit=4)] == [
        "in_name",
        "in_description",
        "in_parameters",
        "in_namespace",
    ]


def test_ties_keep_the_order_tools_were_added() -> None:
    index = ToolIndex()
    for name in ("zeta", "alpha", "mid"):
        index.add(name, ToolDocument(description="same words here"))
    assert [h.name for h in index.search("words")] == ["zeta", "alpha", "mid"]


def test_document_for_reads_name_description_schema_and_namespace() -> None:
    tool = definition(
        "mcp__tickets__assignTicket",
        "Assign a ticket.",
        {
            "type": "object",
            "properties": {
                "ticketId": {"type": "string", "description": "Ticket ID"},
                "options": {
                    "type": "object",
                    "properties": {"notify": {"type": "boolean", "description": "Email the agent"}},
                },
                "mode": {"anyOf": [{"type": "string", "enum": ["round_robin", "direct"]}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"type": "string", "description": "A tag name"}},
            },
        },
        TICKETS,
    )
    document = document_for(tool)
    assert document.name == "mcp__tickets__assignTicket" and document.description == "Assign a ticket."
    for word in ("ticketId", "Ticket ID", "notify", "Email the agent", "round_robin", "direct", "A tag name"):
        assert word in document.parameters
    assert "mcp__tickets" in document.namespace and "helpdesk" in document.namespace
    assert "customer support" in document.namespace
    assert document.namespaces == ("mcp__tickets", "tickets", "helpdesk")


def test_namespace_matching_helpers() -> None:
    radius = ToolNamespace(name="mcp__dev-radius", aliases=["radius"])
    for query in ("mcp__dev-radius", "MCP__dev_radius", "dev-radius", "dev_radius", "radius"):
        assert namespace_matches(radius, query), query
    assert not namespace_matches(radius, "dev") and not namespace_matches(None, "dev_radius")
    assert namespace_key(" Dev-Radius ") == "dev_radius"
    assert namespace_keys(["mcp__dev-radius", "radius"]) == ("mcp__dev_radius", "dev_radius", "radius")
