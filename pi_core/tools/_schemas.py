"""The JSON Schema of each built-in tool's arguments (generated: do not edit).

Regenerate with ``python tools/gen_tool_schemas.py`` after changing an argument model;
``tests/tools/test_tool_schemas.py`` checks that this file matches the models."""

from typing import Any

PARAMETERS: dict[str, dict[str, Any]] = {
    "read": {
        "properties": {
            "path": {
                "description": "Path of the file to read, relative to the working directory or absolute",
                "type": "string",
            },
            "offset": {
                "description": "First line to read, counting from 1",
                "type": "integer",
            },
            "limit": {
                "description": "Largest number of lines to read",
                "minimum": 1,
                "type": "integer",
            },
        },
        "required": ["path"],
        "type": "object",
    },
    "bash": {
        "properties": {
            "command": {
                "description": "The shell command to run",
                "type": "string",
            },
            "timeout": {
                "description": "Timeout in seconds (optional; no timeout by default)",
                "type": "number",
            },
        },
        "required": ["command"],
        "type": "object",
    },
    "edit": {
        "properties": {
            "path": {
                "description": "Path of the file to edit, relative to the working directory or absolute",
                "type": "string",
            },
            "edits": {
                "description": (
                    "One or more replacements, each matched against the original file (not against the result of the "
                    "edits before it). Edits must not overlap; merge changes to nearby lines into one edit."
                ),
                "items": {
                    "properties": {
                        "oldText": {
                            "description": (
                                "Exact text to replace. It must occur exactly once in the original file and must not "
                                "overlap another edits[].oldText of the same call."
                            ),
                            "type": "string",
                        },
                        "newText": {
                            "description": "The text that replaces oldText.",
                            "type": "string",
                        },
                    },
                    "required": ["oldText", "newText"],
                    "type": "object",
                },
                "type": "array",
            },
        },
        "required": ["path", "edits"],
        "type": "object",
    },
    "write": {
        "properties": {
            "path": {
                "description": "Path of the file to write, relative to the working directory or absolute",
                "type": "string",
            },
            "content": {
                "description": "The complete content of the file",
                "type": "string",
            },
        },
        "required": ["path", "content"],
        "type": "object",
    },
    "grep": {
        "properties": {
            "pattern": {
                "description": "Regular expression (or literal text with literal=true) to search for",
                "type": "string",
            },
            "path": {
                "description": "Directory or file to search (default: the working directory)",
                "type": "string",
            },
            "glob": {
                "description": "Only search files matching this glob, e.g. '*.py' or '**/*.test.ts'",
                "type": "string",
            },
            "ignoreCase": {
                "description": "Match case-insensitively (default: false)",
                "type": "boolean",
            },
            "literal": {
                "description": "Treat the pattern as literal text, not a regex (default: false)",
                "type": "boolean",
            },
            "context": {
                "description": "Lines to show before and after each match (default: 0)",
                "type": "integer",
            },
            "limit": {
                "description": "Largest number of matches to return (default: 100)",
                "minimum": 1,
                "type": "integer",
            },
        },
        "required": ["pattern"],
        "type": "object",
    },
    "find": {
        "properties": {
            "pattern": {
                "description": "Glob pattern of the files to find, e.g. '*.py', '**/*.json' or 'src/**/*.test.ts'",
                "type": "string",
            },
            "path": {
                "description": "Directory to search in (default: the working directory)",
                "type": "string",
            },
            "limit": {
                "description": "Largest number of results (default: 1000)",
                "minimum": 1,
                "type": "integer",
            },
        },
        "required": ["pattern"],
        "type": "object",
    },
    "ls": {
        "properties": {
            "path": {
                "description": "Directory to list (default: the working directory)",
                "type": "string",
            },
            "limit": {
                "description": "Largest number of entries to return (default: 500)",
                "minimum": 1,
                "type": "integer",
            },
        },
        "type": "object",
    },
}
