"""A realistic catalogue for ranking tests: a GitHub-like MCP server (snake_case names)
and a helpdesk server (camelCase names), as ToolDefinitions."""

from __future__ import annotations

from typing import Any

from pi_hookspecs import ToolDefinition, ToolExposure, ToolNamespace

GITHUB = ToolNamespace(
    name="mcp__github",
    aliases=["github"],
    description="GitHub: repositories, issues, pull requests and code search",
)
TICKETS = ToolNamespace(
    name="mcp__tickets",
    aliases=["tickets", "helpdesk"],
    description="Helpdesk: customer support tickets, their assignment and comments",
)

OWNER_REPO: dict[str, Any] = {
    "owner": {"type": "string", "description": "Repository owner (user or organization)"},
    "repo": {"type": "string", "description": "Repository name"},
}


def schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)[:1]}


def prop(description: str, kind: str = "string", **extra: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **extra}


GITHUB_TOOLS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "create_issue",
        "Create a new issue in a GitHub repository.",
        schema(
            **OWNER_REPO,
            title=prop("Issue title"),
            body=prop("Issue body content"),
            labels=prop("Labels to apply", "array", items={"type": "string"}),
            assignees=prop("Usernames to assign", "array", items={"type": "string"}),
        ),
    ),
    (
        "list_issues",
        "List issues in a GitHub repository, with filtering options.",
        schema(
            **OWNER_REPO,
            state=prop("Filter by state", enum=["open", "closed", "all"]),
            labels=prop("Filter by labels", "array"),
            sort=prop("Sort order", enum=["created", "updated", "comments"]),
            since=prop("Only issues updated after this ISO 8601 time"),
            page=prop("Page number", "integer"),
        ),
    ),
    (
        "get_issue",
        "Get details of a specific issue in a GitHub repository.",
        schema(**OWNER_REPO, issue_number=prop("The number of the issue", "integer")),
    ),
    (
        "update_issue",
        "Update an existing issue in a GitHub repository.",
        schema(
            **OWNER_REPO,
            issue_number=prop("Issue number to update", "integer"),
            title=prop("New title"),
            body=prop("New description"),
            state=prop("New state", enum=["open", "closed"]),
        ),
    ),
    (
        "close_issue",
        "Close an issue in a GitHub repository, as completed or not planned.",
        schema(
            **OWNER_REPO,
            issue_number=prop("Issue number", "integer"),
            reason=prop("Why it is closed", enum=["completed", "not_planned"]),
        ),
    ),
    (
        "add_issue_comment",
        "Add a comment to an existing issue.",
        schema(**OWNER_REPO, issue_number=prop("Issue number", "integer"), body=prop("Comment text")),
    ),
    (
        "search_issues",
        "Search for issues and pull requests across GitHub repositories.",
        schema(q=prop("Search query using GitHub issues search syntax"), sort=prop("Sort field")),
    ),
    (
        "create_pull_request",
        "Create a new pull request in a GitHub repository.",
        schema(
            **OWNER_REPO,
            title=prop("PR title"),
            head=prop("Branch containing the changes"),
            base=prop("Branch to merge into"),
            draft=prop("Create as a draft PR", "boolean"),
        ),
    ),
    (
        "merge_pull_request",
        "Merge a pull request.",
        schema(
            **OWNER_REPO,
            pull_number=prop("Pull request number", "integer"),
            merge_method=prop("Merge method", enum=["merge", "squash", "rebase"]),
        ),
    ),
    (
        "list_pull_requests",
        "List and filter repository pull requests.",
        schema(
            **OWNER_REPO,
            state=prop("Filter by state", enum=["open", "closed", "all"]),
            base=prop("Filter by base branch"),
        ),
    ),
    (
        "get_pull_request_diff",
        "Get the diff of a pull request.",
        schema(**OWNER_REPO, pull_number=prop("Pull request number", "integer")),
    ),
    (
        "list_commits",
        "Get the list of commits of a branch in a GitHub repository.",
        schema(**OWNER_REPO, sha=prop("Branch name or commit SHA"), page=prop("Page number", "integer")),
    ),
    (
        "search_code",
        "Search for code across GitHub repositories.",
        schema(q=prop("Search query using GitHub code search syntax")),
    ),
    (
        "get_file_contents",
        "Get the contents of a file or directory from a GitHub repository.",
        schema(**OWNER_REPO, path=prop("Path to the file or directory"), branch=prop("Branch to get contents from")),
    ),
    (
        "create_or_update_file",
        "Create or update a single file in a GitHub repository.",
        schema(
            **OWNER_REPO,
            path=prop("Path where to create or update the file"),
            content=prop("Content of the file"),
            message=prop("Commit message"),
            branch=prop("Branch to create or update the file in"),
        ),
    ),
    (
        "create_branch",
        "Create a new branch in a GitHub repository.",
        schema(**OWNER_REPO, branch=prop("Name for the new branch"), from_branch=prop("Source branch")),
    ),
    (
        "fork_repository",
        "Fork a GitHub repository to your account or an organization.",
        schema(**OWNER_REPO, organization=prop("Organization to fork to")),
    ),
    ("search_repositories", "Search for GitHub repositories.", schema(query=prop("Search query"))),
]

TICKET_TOOLS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "createTicket",
        "Open a new support ticket for a customer request.",
        schema(
            subject=prop("Short summary"),
            customerEmail=prop("Who asked"),
            priority=prop("Priority", enum=["low", "normal", "high", "urgent"]),
        ),
    ),
    (
        "assignTicket",
        "Assign a ticket to a support agent or a team.",
        schema(ticketId=prop("Ticket ID"), assignee=prop("Agent or team handle")),
    ),
    (
        "ticket_comment",
        "Post a comment on a ticket; internal notes stay hidden from the customer.",
        schema(ticketId=prop("Ticket ID"), text=prop("Comment text"), internal=prop("Internal note", "boolean")),
    ),
    (
        "searchTickets",
        "Find tickets by status, priority or assignee.",
        schema(status=prop("Ticket status", enum=["new", "open", "pending", "solved"]), assignee=prop("Agent handle")),
    ),
    ("getTicketHistory", "Read one ticket with its full history of updates.", schema(ticketId=prop("Ticket ID"))),
    (
        "setTicketPriority",
        "Change how urgent a ticket is: escalate or lower its priority.",
        schema(ticketId=prop("Ticket ID"), priority=prop("New priority", enum=["low", "normal", "high", "urgent"])),
    ),
]


def _noop(args: dict[str, Any], ctx: Any) -> str:
    return "ok"


def definition(
    name: str,
    description: str,
    parameters: dict[str, Any],
    namespace: ToolNamespace | None = None,
    exposure: ToolExposure = "deferred",
) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=description,
        parameters=parameters,
        execute=_noop,
        exposure=exposure,
        namespace=namespace,
    )


def catalogue(exposure: ToolExposure = "deferred") -> list[ToolDefinition]:
    """Every tool, registered as an MCP server would: ``mcp__<server>__<tool>``."""
    tools = [definition(f"mcp__github__{n}", d, p, GITHUB, exposure) for n, d, p in GITHUB_TOOLS]
    tools += [definition(f"mcp__tickets__{n}", d, p, TICKETS, exposure) for n, d, p in TICKET_TOOLS]
    return tools


def short(name: str) -> str:
    """``mcp__github__create_issue`` -> ``create_issue``."""
    return name.rsplit("__", 1)[-1]
