"""A plugin adds a wire API, a provider and a model through ``register_providers`` —
the path pi's own APIs take — and the real ``pi -p`` answers through it."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import agent_dir, run_pi

PLUGIN = '''
from pi_hookspecs import ApiDefinition, ProviderDefinition, Model, hookimpl


async def shout(model, context, options, out):
    """A toy API: answers with the last user message in capitals, reusing the
    contract's MessageBuilder as pi's own APIs do."""
    last = context.messages[-1]
    text = last.content if isinstance(last.content, str) else "".join(b.text for b in last.content)
    out.start()
    index = out.text_start()
    for word in text.upper().split():
        out.text_delta(index, word + " ")
    out.set_usage(input=len(text), output=len(text.split()))
    out.stop("stop")


class Shout:
    @hookimpl
    def register_providers(self, register):
        register(ApiDefinition(name="shout-api", stream=shout))
        register(ApiDefinition(name="lazy-api", stream="json:dumps"))  # imported on first use only
        register(ProviderDefinition(name="loud", api="shout-api", api_key="none",
                                    models=[Model(id="megaphone", context_window=4096)]))
'''


def test_a_plugin_api_answers_in_print_mode(tmp_path: Path) -> None:
    plugin = agent_dir() / "extensions" / "shout.py"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    plugin.write_text(PLUGIN)
    only = {"PI_EXTENSIONS": "shout"}
    done = run_pi("-p", "--no-session", "--model", "loud/megaphone", "hello there", cwd=tmp_path, env=only)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "HELLO THERE"

    listed = run_pi("extensions", "list", "--json", cwd=tmp_path, env=only)
    assert listed.returncode == 0, listed.stderr
    shout = next(p for p in json.loads(listed.stdout)["plugins"] if p["name"] == "shout")
    assert shout["apis"] == ["shout-api", "lazy-api"] and shout["providers"] == ["loud"]
