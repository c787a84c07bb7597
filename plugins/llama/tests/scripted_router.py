"""A scripted llama.cpp router for the tests: a small HTTP server in a thread.

It speaks what pi (and pi 1.6.0) ask a router: ``/health``, ``/models`` (``?reload=1``),
``/props`` (``?model=``), ``POST /models/load``, ``POST /models/unload``, ``POST /models``
(a download), ``/v1/chat/completions`` (streamed), and, for the download search, the two
Hugging Face endpoints ``/api/models?search=`` and ``/api/models/OWNER/REPO``. A load
takes ``load_polls`` looks at ``/models`` (reporting ``loading`` with progress), a
download ``download_polls``; every request is recorded.

For classification it also speaks ``/tokenize`` (a toy vocabulary: a newline is token 10,
a one-character text its code point plus 1000, ``Yes`` / ``No`` 2001 / 2002, anything
else one token per character), ``/apply-template`` (a fixed chat template ending with a
newline), ``/completion`` (the next token's top log-probabilities: the ones a test put in
``label_logprobs`` under the question the prompt ends with, then filler tokens, cut to
``n_probs``) and a decision model's ``/v1/systemone`` (``systemone_answers``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class RouterState:
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    autoload: bool = False
    api_key: str | None = None
    load_polls: int = 2
    download_polls: int = 2
    answer: str = "Hello from llama.cpp"
    hf_models: list[dict[str, Any]] = field(default_factory=list)
    hf_details: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    label_logprobs: dict[str, dict[str, float]] = field(default_factory=dict)
    """Question instructions -> label -> log-probability as the next token."""
    systemone_answers: dict[str, Any] = field(default_factory=dict)
    """Question id -> the wire answer ``/v1/systemone`` gives."""
    chat_script: list[dict[str, Any]] = field(default_factory=list)
    """Replies of ``/v1/chat/completions`` in order (``{"tool_call": {"name", "arguments"}}``
    or ``{"text": ...}``); ``answer`` once they are used up."""
    pending: dict[str, list[Any]] = field(default_factory=dict)
    """model -> [kind ("load" | "download"), polls left]."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, model_id: str, status: str = "unloaded", *, n_ctx: int | None = None, **extra: Any) -> None:
        entry: dict[str, Any] = {"id": model_id, "object": "model", "status": {"value": status}, **extra}
        entry.setdefault("source", "models_dir")
        if n_ctx is not None:
            entry["n_ctx"] = n_ctx
        self.models[model_id] = entry

    def paths(self, method: str | None = None) -> list[str]:
        return [r.path for r in self.requests if method is None or r.method == method]

    def posted(self, path: str) -> list[Any]:
        return [r.body for r in self.requests if r.method == "POST" and r.path == path]

    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

    # ------------------------------------------------------------------ behaviour

    def public(self, entry: dict[str, Any]) -> dict[str, Any]:
        shown = {k: v for k, v in entry.items() if k != "n_ctx"}
        shown["status"] = dict(entry["status"])
        return shown

    def tick(self) -> None:
        """One look at ``/models``: pending loads and downloads move on."""
        for model_id, job in list(self.pending.items()):
            kind, left = job
            entry = self.models.get(model_id)
            if entry is None:
                continue
            if left <= 0:
                entry["status"] = {"value": "loaded" if kind == "load" else "unloaded"}
                if kind == "load":
                    entry["status"]["args"] = ["--ctx-size", str(entry.get("n_ctx", 4096))]
                del self.pending[model_id]
            else:
                job[1] = left - 1
                if kind == "load":
                    entry["status"] = {
                        "value": "loading",
                        "progress": {"stage": "tensors", "stages": ["metadata", "tensors"], "value": 0.5},
                    }
                else:
                    done = 100 * (self.download_polls - left + 1)
                    total = 100 * (self.download_polls + 1)
                    entry["status"] = {
                        "value": "downloading",
                        "progress": {"model.gguf": {"done": done, "total": total}},
                    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self, method: str) -> None:
        state = self.server.state
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        query = parse_qs(url.query)
        with state.lock:
            state.requests.append(Request(method, url.path, query, dict(self.headers.items()), body))
        if url.path.startswith("/api/models"):
            return self._huggingface(url.path, query)
        if state.api_key and self.headers.get("Authorization") != f"Bearer {state.api_key}":
            return self._send(
                401, {"error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}}
            )
        with state.lock:
            if method == "GET" and url.path == "/health":
                return self._send(200, {"status": "ok"})
            if method == "GET" and url.path == "/models":
                state.tick()
                return self._send(200, {"object": "list", "data": [state.public(e) for e in state.models.values()]})
            if method == "GET" and url.path == "/props":
                model = (query.get("model") or [None])[0]
                if model is None:
                    return self._send(200, {"role": "router", "models_autoload": state.autoload})
                entry = state.models.get(model)
                if entry is None or entry["status"]["value"] != "loaded":
                    return self._send(400, {"error": {"message": f"model {model} is not loaded"}})
                return self._send(
                    200,
                    {
                        "default_generation_settings": {"n_ctx": entry.get("n_ctx", 4096)},
                        "chat_template": entry.get("chat_template", "{{ messages }}"),
                        "model_path": f"/models/{model}.gguf",
                    },
                )
            if method == "POST" and url.path in ("/models/load", "/models/unload", "/models"):
                model = body.get("model") if isinstance(body, dict) else None
                if not isinstance(model, str):
                    return self._send(400, {"error": {"message": "model is required"}})
                if url.path == "/models":
                    state.add(model, "downloading")
                    state.pending[model] = ["download", state.download_polls]
                    return self._send(200, {"success": True})
                entry = state.models.get(model)
                if entry is None:
                    return self._send(404, {"error": {"message": f"model {model} not found"}})
                if url.path == "/models/load":
                    entry["status"] = {"value": "loading"}
                    state.pending[model] = ["load", state.load_polls]
                else:
                    entry["status"] = {"value": "unloaded"}
                    state.pending.pop(model, None)
                return self._send(200, {"success": True})
        if method == "POST" and url.path == "/v1/chat/completions":
            return self._chat(body)
        if method == "POST" and url.path in ("/tokenize", "/apply-template", "/completion", "/v1/systemone"):
            return self._classify(url.path, body if isinstance(body, dict) else {})
        return self._send(404, {"error": {"message": f"no route {method} {url.path}"}})

    def _huggingface(self, path: str, query: dict[str, list[str]]) -> None:
        state = self.server.state
        if path == "/api/models":
            text = (query.get("search") or [""])[0].lower()
            return self._send(200, [m for m in state.hf_models if text in m["id"].lower()])
        repository = unquote(path.removeprefix("/api/models/"))
        details = state.hf_details.get(repository)
        if details is None:
            return self._send(404, {"error": "Repository not found"})
        return self._send(200, details)

    def _chat(self, body: Any) -> None:
        state = self.server.state
        model = body.get("model") if isinstance(body, dict) else None
        with state.lock:
            entry = state.models.get(model) if isinstance(model, str) else None
            ready = entry is not None and entry["status"]["value"] in ("loaded", "sleeping")
        if not ready:
            return self._send(400, {"error": {"message": f"model {model} is not loaded"}})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        with state.lock:
            reply = state.chat_script.pop(0) if state.chat_script else {"text": state.answer}
        call = reply.get("tool_call")
        if call is not None:
            delta = {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": f"call_{len(state.chat_requests())}",
                        "type": "function",
                        "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                    }
                ]
            }
            body_chunks = [{"choices": [{"index": 0, "delta": delta}]}]
            finish = "tool_calls"
        else:
            text = reply["text"]
            body_chunks = [
                {"choices": [{"index": 0, "delta": {"content": text[i : i + 6]}}]} for i in range(0, len(text), 6)
            ]
            finish = "stop"
        chunks: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
            *body_chunks,
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}},
        ]
        for chunk in chunks:
            frame = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model, **chunk}
            self.wfile.write(f"data: {json.dumps(frame)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def _classify(self, path: str, body: dict[str, Any]) -> None:
        state = self.server.state
        with state.lock:
            entry = state.models.get(body.get("model"))  # type: ignore[arg-type]
        if entry is None:
            return self._send(404, {"error": {"message": f"model {body.get('model')} not found"}})
        if path == "/tokenize":
            return self._send(200, {"tokens": toy_tokens(str(body.get("content", "")))})
        if path == "/apply-template":
            messages = body.get("messages") or []
            rendered = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages)
            return self._send(200, {"prompt": rendered + "<|assistant|>\n"})
        if path == "/v1/systemone":
            answers = {qid: state.systemone_answers[qid] for qid in body.get("questions", {})}
            return self._send(200, {"answers": answers, "usage": {"input_tokens": 120, "output_tokens": 3}})
        prompt = str(body.get("prompt", ""))
        question = prompt.rsplit("Question: ", 1)[-1].split("\n", 1)[0]
        chosen = state.label_logprobs.get(question, {})
        top = [
            {"id": toy_tokens("\n" + label)[-1]["id"], "token": label, "logprob": lp} for label, lp in chosen.items()
        ]
        top += [{"id": 5000 + i, "token": f"filler{i}", "logprob": -20.0 - i} for i in range(300)]
        top.sort(key=lambda t: -t["logprob"])
        depth = int(body.get("n_probs") or 10)
        first = {
            "id": top[0]["id"],
            "token": top[0]["token"],
            "logprob": top[0]["logprob"],
            "top_logprobs": top[:depth],
        }
        return self._send(200, {"content": top[0]["token"], "completion_probabilities": [first]})

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")


def toy_tokens(text: str) -> list[dict[str, Any]]:
    """The scripted router's vocabulary (see the module docstring)."""
    ids: list[int] = []
    rest = text
    while rest:
        if rest[0] == "\n":
            ids.append(10)
            rest = rest[1:]
            continue
        word = next((w for w in ("Yes", "No") if rest.startswith(w)), None)
        if word is not None:
            ids.append(2001 if word == "Yes" else 2002)
            rest = rest[len(word) :]
            continue
        ids.append(1000 + ord(rest[0]))
        rest = rest[1:]
    return [{"id": i, "piece": ""} for i in ids]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: RouterState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class ScriptedRouter:
    def __init__(self) -> None:
        self.state = RouterState()
        self._server = _Server(self.state)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedRouter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def router() -> Iterator[ScriptedRouter]:
    with ScriptedRouter() as server:
        yield server


def dead_url() -> str:
    """A loopback URL nothing listens on."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
