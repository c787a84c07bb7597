"""tool_search's BM25 index over 10,000 synthetic tools.

Budget (docs/architecture.md, "Performance budgets"): build the index <= 200 ms, one query <= 2 ms (median), one
incremental add <= 1 ms. Printed as measured / budget; never asserted.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from pi_toolindex import ToolIndex, document_for, tokenize

from pi_hookspecs import ToolDefinition, ToolNamespace

TOOLS = 10_000
SERVERS = 100
QUERIES = 1_000
ADDS = 500
ROUNDS = 3

VERBS = (
    "create get list update delete search close merge assign archive restore export import sync "
    "upload download share move copy rename approve reject publish schedule cancel start stop "
    "summarize validate"
).split()
NOUNS = (
    "issue pull_request commit branch repository file folder ticket comment label milestone user team "
    "project board card invoice payment customer order product shipment refund subscription plan "
    "report dashboard chart metric alert incident deployment build pipeline job artifact release tag "
    "webhook secret token key certificate domain record zone bucket object volume snapshot backup "
    "database table query index cluster node pod service namespace message channel thread reaction "
    "meeting calendar event reminder task note document page space wiki contact lead deal campaign "
    "email template segment survey response form field attachment image video playlist track album"
).split()
WORDS = (
    "the a of for in with new existing one all by from to its their given selected current recent "
    "open closed pending active archived public private shared remote local full partial summary "
    "details status owner name id url date time range filter sort page limit cursor"
).split()


def _words(rng: random.Random, lo: int, hi: int) -> list[str]:
    return rng.sample(WORDS, rng.randint(lo, hi))


def synthetic_tools(count: int, seed: int = 1, prefix: str = "") -> list[ToolDefinition]:
    """MCP-shaped tools: ``mcp__svc<k>__<verb>_<noun>_<i>`` over 100 servers, a 9-23 word
    description, 1-6 parameters with 2-8 word descriptions, a namespace with a
    description (about 50 terms per tool, like a typical MCP server's tools)."""
    rng = random.Random(seed)
    namespaces = [
        ToolNamespace(
            name=f"mcp__svc{i}",
            aliases=[f"svc{i}"],
            description=f"Service {i}: " + " ".join(rng.sample(NOUNS, 6)).replace("_", " "),
        )
        for i in range(SERVERS)
    ]
    tools = []
    for i in range(count):
        verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
        namespace = namespaces[i % SERVERS]
        words = [verb.capitalize(), *_words(rng, 3, 8), noun.replace("_", " "), *_words(rng, 5, 13)]
        properties: dict[str, Any] = {}
        for _ in range(rng.randint(1, 6)):
            field = rng.choice(NOUNS) + "_" + rng.choice(("id", "name", "filter", "limit", "status"))
            text = " ".join([*_words(rng, 1, 4), rng.choice(NOUNS).replace("_", " "), *_words(rng, 0, 3)])
            properties[field] = {"type": "string", "description": text.capitalize()}
        tools.append(
            ToolDefinition(
                name=f"{namespace.name}__{prefix}{verb}_{noun}_{i}",
                description=" ".join(words) + ".",
                parameters={"type": "object", "properties": properties},
                execute=lambda args, ctx: None,
                exposure="deferred",
                namespace=namespace,
            )
        )
    return tools


def queries(count: int, seed: int = 2) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = [rng.choice(VERBS), rng.choice(NOUNS).replace("_", " ")]
        if rng.random() < 0.5:
            words.insert(1, rng.choice(WORDS))
        out.append(" ".join(words))
    return out


def _timed(fn: Any) -> tuple[float, float]:
    """(first run, best of ``ROUNDS``) in ms; the first run also fills the tokenizer's
    word cache, as the first index of a session does."""
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times[0] * 1000, min(times) * 1000


def measure() -> dict[str, float]:
    tools = synthetic_tools(TOOLS)
    documents = [(t.name, document_for(t), t) for t in tools]

    def build_from_definitions() -> None:
        ToolIndex().sync(tools)

    def build_from_documents() -> None:
        index = ToolIndex()
        for name, document, source in documents:
            index.add(name, document, source=source)

    build_cold, build = _timed(build_from_definitions)
    _, build_documents = _timed(build_from_documents)

    index = ToolIndex()
    index.sync(tools)
    query_times = []
    for query in queries(QUERIES):
        start = time.perf_counter()
        index.search(query, limit=8)
        query_times.append((time.perf_counter() - start) * 1000)

    extra = synthetic_tools(ADDS, seed=3, prefix="x")
    add_times = []
    for tool in extra:
        start = time.perf_counter()
        index.add_tool(tool)
        add_times.append((time.perf_counter() - start) * 1000)
    remove_times = []
    for tool in extra:
        start = time.perf_counter()
        index.remove(tool.name)
        remove_times.append((time.perf_counter() - start) * 1000)

    _, sync_noop = _timed(lambda: index.sync(tools))
    terms = sum(len(tokenize(text)) for _, document, _ in documents for text, _ in document.fields())
    return {
        "terms_per_tool": terms / TOOLS,
        "build": build,
        "build_cold": build_cold,
        "build_documents": build_documents,
        "query_median": statistics.median(query_times),
        "query_p95": statistics.quantiles(query_times, n=20)[-1],
        "add_median": statistics.median(add_times),
        "remove_median": statistics.median(remove_times),
        "sync_noop": sync_noop,
    }


def report() -> list[str]:
    m = measure()
    return [
        f"tool_search index ({TOOLS:,} synthetic tools, {m['terms_per_tool']:.0f} terms each; ms; measured / budget)",
        f"  build from definitions (document_for + add)  {m['build']:8.1f} / 200   = {m['build'] / 200:5.2f}x",
        f"    the first build (empty word cache)        {m['build_cold']:8.1f}",
        f"  build from prepared documents               {m['build_documents']:8.1f}",
        f"  query, median of {QUERIES:,}                     {m['query_median']:8.3f} / 2     = "
        f"{m['query_median'] / 2:5.2f}x  (p95 {m['query_p95']:.3f})",
        f"  one incremental add, median of {ADDS}         {m['add_median']:8.3f} / 1     = {m['add_median']:5.2f}x",
        f"  one remove, median                          {m['remove_median']:8.3f}",
        f"  sync with nothing changed (per search)      {m['sync_noop']:8.3f}",
    ]


if __name__ == "__main__":
    print("\n".join(report()))
