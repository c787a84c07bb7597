"""The script's ``models`` module: listing models, classifier calls against a scripted
System One endpoint (TypeSafe's protocol, over loopback), concurrent calls limited to four,
image generation shown with ``image()``, usage added to the ``codemode`` result, and the
mistakes a script can make."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from codemode_helpers import codemode, setup

from pi_core.ai import current_tools
from pi_core.testing import PiHarness

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


class Endpoint:
    """A loopback server answering ``POST …/systemone`` (System One) and
    ``POST …/chat/completions`` (OpenRouter's image models); it records every request
    and how many ran at once."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.running = 0
        self.most = 0
        self.delay = 0.0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with outer.lock:
                    outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                    outer.running += 1
                    outer.most = max(outer.most, outer.running)
                time.sleep(outer.delay)
                with outer.lock:
                    outer.running -= 1
                if self.path.endswith("/systemone"):
                    answer = outer.answer(body)
                    status = 401 if body["state"].get("bad_key") else 200
                    payload = answer if status == 200 else {"error": {"message": "Invalid API key"}}
                else:
                    status, payload = 200, outer.image_answer()
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @staticmethod
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        message = str(body["state"].get("message", ""))
        answers: dict[str, Any] = {}
        for question_id, question in body["questions"].items():
            if question["type"] == "noul":
                answers[question_id] = {"type": "noul", "noul": 0.9 if "thanks" in message else 0.1}
            elif question["type"] == "choice":
                first = next(iter(question["criteria"]))
                answers[question_id] = {
                    "type": "choice",
                    "choice": first,
                    "probabilities": {first: 1.0},
                    "confidence": 1,
                }
            else:
                answers[question_id] = {"type": "score", "score": 1.0, "confidence": 0.5}
        return {"answers": answers, "usage": {"input_tokens": 1000, "output_tokens": 2}}

    @staticmethod
    def image_answer() -> dict[str, Any]:
        image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
        return {
            "id": "gen-7",
            "choices": [{"message": {"role": "assistant", "content": "Here it is.", "images": [image]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 100},
        }

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoint(pi_agent_dir: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    server = Endpoint()
    (pi_agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "typesafe": {"baseUrl": server.url + "/v1", "apiKey": "ts-key"},
                    "openrouter": {"baseUrl": server.url + "/api/v1", "apiKey": "or-key"},
                }
            }
        )
    )
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "TYPESAFE_API_KEY", "CLOUDFLARE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield server
    server.close()


APPROVED = """{"type": "bool", "instructions": "Does the user approve?", "criteria": {"true": "yes", "false": "no"}}"""


def test_a_classifier_question_is_answered_through_codemode(pi: PiHarness, endpoint: Endpoint) -> None:
    setup(pi)
    _, [result] = codemode(
        pi,
        'usable = models.get_available_of_type("classifier")\n'
        'print(sorted(m["provider"] + "/" + m["id"] for m in usable if m["provider"] == "typesafe"))\n'
        'jev = models.get_model_of_type("classifier", "typesafe", "jev-latest")\n'
        'print(jev["type"], jev["api"], models.get_model_of_type("classifier", "typesafe", "nope"))\n'
        "result = models.classify(jev, {\n"
        '    "state": {"message": "The change works, thanks."},\n'
        f'    "questions": {{"approved": {APPROVED}}},\n'
        "})\n"
        'print("answer:", result["stop_reason"], result["answers"]["approved"]["probability"])\n',
    )
    assert not result.is_error, result.text
    assert "answer: stop 0.9" in result.text
    assert "['typesafe/jev-latest']" in result.text and "classifier typesafe-system-one None" in result.text
    [request] = endpoint.requests
    assert request["path"] == "/v1/systemone" and request["auth"] == "Bearer ts-key"
    assert request["body"]["questions"]["approved"]["type"] == "noul"
    # the call's usage is the codemode result's, so it counts toward the session cost
    assert result.message.usage is not None and result.message.usage.input == 1000
    assert result.message.usage.output == 2


def test_gathered_calls_run_four_at_a_time(pi: PiHarness, endpoint: Endpoint) -> None:
    endpoint.delay = 0.2
    setup(pi)
    _, [result] = codemode(
        pi,
        'jev = {"provider": "typesafe", "id": "jev-latest"}\n'
        "async def one(i: int) -> float:\n"
        '    state = {"message": "thanks " + str(i)}\n'
        f'    r = await models.classify_async(jev, {{"state": state, "questions": {{"approved": {APPROVED}}}}})\n'
        '    return r["answers"]["approved"]["probability"]\n'
        "results = await asyncio.gather(*[one(i) for i in range(6)])\n"
        "print(results)\n",
    )
    assert not result.is_error, result.text
    assert "[0.9, 0.9, 0.9, 0.9, 0.9, 0.9]" in result.text
    assert len(endpoint.requests) == 6 and 2 <= endpoint.most <= 4
    assert result.message.usage is not None and result.message.usage.input == 6000


def test_images_are_generated_and_shown(pi: PiHarness, endpoint: Endpoint) -> None:
    setup(pi)
    _, [result] = codemode(
        pi,
        'painter = models.get_model_of_type("image", "openrouter", "google/gemini-2.5-flash-image")\n'
        'made = models.generate_images(painter, {"input": [{"type": "text", "text": "a fox"}]})\n'
        'for block in made["output"]:\n'
        '    if block["type"] == "image":\n'
        "        image(block)\n"
        "    else:\n"
        '        text(block["text"])\n',
    )
    assert not result.is_error, result.text
    assert "Here it is." in result.text and "[image 1: image/png, saved to" in result.text
    assert any(getattr(block, "type", "") == "image" for block in result.message.content)
    assert endpoint.requests[0]["path"] == "/api/v1/chat/completions"
    assert result.message.usage is not None and result.message.usage.output == 100


def test_provider_errors_are_results_and_mistakes_raise_in_the_script(pi: PiHarness, endpoint: Endpoint) -> None:
    setup(pi)
    _, [result] = codemode(
        pi,
        'jev = {"provider": "typesafe", "id": "jev-latest"}\n'
        f'bad = models.classify(jev, {{"state": {{"bad_key": True}}, "questions": {{"approved": {APPROVED}}}}})\n'
        'print(bad["stop_reason"], bad["error_message"])\n'
        'chat = models.classify({"provider": "openai", "id": "gpt-5.5"}, {"state": {}, "questions": {}})\n'
        'print(chat["error_message"])\n'
        "try:\n"
        '    models.get_models_of_type("oracle")\n'
        "except ValueError as error:\n"
        '    print("ValueError:", error)\n'
        "try:\n"
        '    models.classify(None, {"state": {}, "questions": {}})\n'
        "except ValueError as error:\n"
        '    print("ValueError:", error)\n',
    )
    assert not result.is_error, result.text
    assert "error System One API error (401): Invalid API key" in result.text
    assert "No classifier model openai/gpt-5.5 (a chat model" in result.text
    assert "ValueError: unknown model type 'oracle'" in result.text
    assert "ValueError: models.classify() got None for the model" in result.text


def test_the_description_tells_the_model_about_models(pi: PiHarness) -> None:
    setup(pi)
    pi.script("ok")
    run = pi.prompt("hi")
    [description] = [t.description for t in current_tools(run.requests[0].messages) if t.name == "codemode"]
    assert "models.classify(model," in description and "get_available_of_type" in description
