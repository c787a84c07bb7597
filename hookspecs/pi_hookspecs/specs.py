"""The hook specifications: one per event, plus the registration hooks.

Each hookspec is the single source of its hook. Its signature names the event model, the
context and the result model (``def tool_call(event: ToolCallEvent, ctx: ExtensionContext)
-> ToolCallResult | None``); its decorator (:func:`~pi_hookspecs.rules.event_spec`,
:func:`~pi_hookspecs.rules.registration_spec`) the composition rule, whether a failing
handler blocks the operation and the section of the hook reference; its docstring is the
reference (``docs/hooks.md`` is generated from it): when it fires, what an
implementation may return, how the results of several plugins combine and what an
exception does. :data:`EVENTS`, :data:`REGISTRATION_HOOKS` and :data:`HOOK_GROUPS`,
at the end of this module, are derived from the hookspecs.

Event hooks take ``(event, ctx)``; an implementation may take a subset of the names, e.g.
only ``event``, and may return the result model, a dict with its fields, or ``None``.
Implementations may be plain functions or coroutines. Annotate an implementation with
the same types to have an editor complete ``event.``::

    from pi_hookspecs import ExtensionContext, ToolCallEvent, ToolCallResult, hookimpl

    @hookimpl
    def tool_call(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None: ...
"""

from typing import TYPE_CHECKING, Any

from .compose import Actions, Aggregate, BlockingGate, Chained, DecidingGate, Patched
from .context import ExtensionContext, ProjectTrustContext
from .events import (
    AfterProviderResponseEvent,
    AgentBeforeSettleEvent,
    AgentEndEvent,
    AgentSettledEvent,
    AgentStartEvent,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BoundaryResult,
    InputEvent,
    InputResult,
    MessageEndEvent,
    MessageEndResult,
    MessageStartEvent,
    MessageUpdateEvent,
    ResourcesDiscoverEvent,
    ResourcesDiscoverResult,
    SessionShutdownEvent,
    SessionStartEvent,
    ToolCallEvent,
    ToolCallResult,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .registration import (
    AddHookspecs,
    RegisterCliCommand,
    RegisterCommand,
    RegisterFlag,
    RegisterMarkdownTransformer,
    RegisterMcpServer,
    RegisterProvider,
    RegisterRenderer,
    RegisterShortcut,
    RegisterTool,
    RegisterToolRenderer,
    RegisterVirtualModel,
)
from .rules import EventSpec, RegistrationSpec, Rule, contract_of, event_spec, registration_spec

if TYPE_CHECKING:  # occasional events: made when first used (pi_hookspecs.events.OCCASIONAL)
    from ._occasional import (
        BashSpawnEvent,
        BashSpawnResult,
        BeforeProviderHeadersEvent,
        BeforeProviderRequestEvent,
        BeforeProviderRequestResult,
        CacheWarmingDecisionEvent,
        CacheWarmingDecisionResult,
        ContextEvent,
        ContextResult,
        ContextWithSystemEvent,
        ContextWithSystemResult,
        FileAccessEvent,
        FileAccessResult,
        HookOutcomeEvent,
        McpServersChangeEvent,
        ModelSelectEvent,
        ProjectTrustEvent,
        ProjectTrustResult,
        ProviderStreamEvent,
        SessionBeforeCompactEvent,
        SessionBeforeCompactResult,
        SessionBeforeForkEvent,
        SessionBeforeForkResult,
        SessionBeforeSwitchEvent,
        SessionBeforeSwitchResult,
        SessionBeforeTreeEvent,
        SessionBeforeTreeResult,
        SessionCompactEvent,
        SessionCompactFailedEvent,
        SessionInfoChangedEvent,
        SessionTreeEvent,
        ThinkingLevelSelectEvent,
        ToolResultEvent,
        ToolResultPatch,
        UiPromptEndEvent,
        UiPromptStartEvent,
        UserBashEvent,
        UserBashResult,
    )

# =============================================================================== registration


@registration_spec()
def register_tools(register: RegisterTool) -> None:
    """Register tools.

    **Fires** once per session runtime (startup, ``/reload``, new / resume / fork), in
    plugin load order, before ``session_start``.

    **Call** ``register(definition)`` with a :class:`ToolDefinition` or a function
    decorated with ``@tool``. A tool registered under the name of a built-in tool
    replaces it. Between plugins the first registration of a name wins; later ones are
    reported as conflicts. Register again with ``exposure="hidden"`` to withdraw a tool.

    **Errors**: an exception, or an invalid definition, is reported as a diagnostic
    naming the plugin; the other registrations stand.
    """


@registration_spec()
def register_commands(register: RegisterCommand) -> None:
    """Register slash commands.

    **Fires** once per session runtime, in plugin load order.

    **Call** ``register(name, handler, description=...)`` or
    ``register(CommandDefinition(...))``. ``handler(args, ctx)`` gets the text after the
    command name and a :class:`CommandContext`; it may be async. The first plugin to
    register a name keeps it.

    **Errors**: reported as a diagnostic naming the plugin.
    """


@registration_spec()
def register_flags(register: RegisterFlag) -> None:
    """Register command-line flags.

    **Fires** when pi builds its command line and once per session runtime.

    **Call** ``register(name, type="boolean" | "string", default=..., description=...)``.
    The flag is listed in ``pi --help`` and accepted as ``--name``; read its value with
    ``ctx.get_flag(name)``. The first plugin to register a name keeps it.

    **Errors**: reported as a diagnostic naming the plugin.
    """


@registration_spec()
def register_providers(register: RegisterProvider) -> None:
    """Register model providers.

    **Fires** once per session runtime, before the model is chosen, so the models it
    adds can be selected with ``--model``.

    **Call** ``register(ProviderDefinition(...))`` (or a dict with the same fields):
    a provider id, its models, ``base_url`` / ``api`` / ``api_key`` like a
    ``models.json`` provider, and optionally ``stream`` (an async generator function
    ``stream(model, context, options)``) for an API of its own. Call
    ``register(ApiDefinition(name=..., stream=...))`` to add a wire API that any
    provider's models can name in ``api``: ``stream(model, context, options, out)``
    reports through a :class:`~pi_hookspecs.streaming.MessageBuilder`, or is given as
    ``"module:function"`` and imported on the first request. pi's own APIs and model
    catalogue are registered this way by its built-in provider plugin. Call
    ``register(CredentialSource(provider=..., resolve=...))`` to lend the requests of
    a provider's models a credential pi cannot find itself (a token from a cloud SDK's
    credential chain): see :class:`~pi_hookspecs.credentials.CredentialSource`.
    Call ``register(LoginMethod(provider=..., name=..., login=..., refresh=...))`` to
    add a way to sign in to a provider (a subscription's OAuth, an organisation's own
    single sign-on): ``pi auth login <provider>`` and ``/login`` run ``login(callbacks)``
    and store the :class:`~pi_hookspecs.OAuthCredentials` it returns in ``auth.json``;
    requests to the provider's models send them, refreshed through ``refresh`` under the
    file's lock when they expire (see :class:`~pi_hookspecs.auth.LoginMethod`). pi's own
    Claude Pro/Max, ChatGPT Plus/Pro and GitHub Copilot logins are registered this way;
    a plugin's login method for the same provider replaces pi's.

    A provider whose models come from a live service sets ``refresh_models`` (pi's
    ``refreshModels``): ``refresh_models(refresh)`` gets a
    :class:`~pi_hookspecs.CatalogueRefresh` and returns the provider's models (a list
    of :class:`Model` or dicts; ``None`` keeps them). pi calls it offline (``allow_network``
    false) each time a session's models are built - ``None`` there starts from the
    snapshot stored by an earlier refresh, ``refresh.stored`` - and online on ``pi update
    --models``, in the background when interactive or RPC mode starts (not with
    ``--offline`` / ``PI_OFFLINE``) and after ``/login``. ``await refresh.publish(snapshot)``
    keeps a :class:`~pi_hookspecs.CatalogueSnapshot` in ``models-store.json`` for offline
    starts (``publish(None)`` deletes it). A team catalogue kept in a shared file, say:

    ```python
    import json
    from pathlib import Path

    from pi_hookspecs import CatalogueSnapshot, Model, ProviderDefinition, hookimpl


    class TeamModels:
        def __init__(self, catalogue: Path) -> None:
            self.catalogue = catalogue

        @hookimpl
        def register_providers(self, register):
            register(
                ProviderDefinition(
                    name="team",
                    base_url="https://llm.team.test/v1",
                    api="openai-completions",
                    api_key="$TEAM_KEY",
                    refresh_models=self.refresh_models,
                )
            )

        async def refresh_models(self, refresh):
            if not refresh.allow_network:
                return None  # start from refresh.stored
            names = json.loads(self.catalogue.read_text())["models"]
            models = [Model(id=name, context_window=32_000) for name in names]
            await refresh.publish(CatalogueSnapshot(models=models))
            return models


    def test_team_models(pi, tmp_path):
        catalogue = tmp_path / "catalogue.json"
        catalogue.write_text(json.dumps({"models": ["coder", "writer"]}))
        pi.use(TeamModels(catalogue))
        models = pi.session.models  # started offline: nothing stored yet
        assert models.get("team", "coder") is None
        assert pi.run(models.refresh_catalogues(allow_network=True)) == {}  # what pi update --models does
        assert models.get("team", "coder").context_window == 32_000
        assert [m.id for m in models.catalogues.store.read("team").models] == ["coder", "writer"]
    ```

    A refresh that fails is reported by the command that asked for it (``pi update
    --models`` names the provider) and leaves the models as they were.

    Models that do not chat declare a ``type``: ``classifier`` (answers typed ``choice``,
    ``bool`` and ``score`` questions about JSON state) or ``image`` (makes images). They
    never appear in ``/model`` or ``--list-models``; plugins reach them through
    ``ctx.model_registry`` (``get_model_of_type``, ``classify``, ``generate_images``) and
    scripts through codemode's ``models``. A plugin adds the API that serves them with
    ``register(ApiDefinition(name=..., classify=...))`` (or ``generate_images=...``; see
    :mod:`pi_hookspecs.model_types`): ``classify(model, context, options)`` gets the
    model, a :class:`~pi_hookspecs.ClassifierContext` and the request's options with the
    provider's credentials, returns a :class:`~pi_hookspecs.ClassifierResult` (or a dict
    of it) and raises on failure (the caller gets an error result, never the exception).
    A judge that calls a prompt urgent when it holds one of a few words, and a hook that
    asks it:

    ```python
    from pi_hookspecs import ApiDefinition, ClassifierResult, Model, ProviderDefinition, hookimpl


    async def keyword_judge(model, context, options):
        text = str(context.state).lower()
        answers = {}
        for question_id, question in context.questions.items():
            hit = any(word in text for word in question.criteria.true.split())
            answers[question_id] = {"type": "bool", "probability": 0.9 if hit else 0.1}
        return ClassifierResult(answers=answers)


    URGENT = {"type": "bool", "instructions": "Is it urgent?", "criteria": {"true": "now asap outage", "false": ""}}


    class Triage:
        @hookimpl
        def register_providers(self, register):
            register(ApiDefinition(name="keyword-judge", classify=keyword_judge))
            judge = Model(id="keywords", type="classifier", api="keyword-judge")
            register(ProviderDefinition(name="judges", api_key="unused", models=[judge]))

        @hookimpl
        async def input(self, event, ctx):
            judge = ctx.model_registry.get_model_of_type("classifier", "judges", "keywords")
            result = await ctx.model_registry.classify(
                judge, {"state": {"prompt": event.text}, "questions": {"urgent": URGENT}}
            )
            if result.stop_reason == "stop" and result.answers["urgent"].probability > 0.5:
                ctx.ui.notify("An urgent prompt", "warning")


    def test_triage(pi):
        pi.use(Triage())
        pi.script("on it")
        pi.prompt("The site is down: fix the outage asap")
        assert ("warning", "An urgent prompt") in pi.ui.notifications
        assert pi.session.models.get("judges", "keywords") is None  # not a chat model
    ```

    **Errors**: reported as a diagnostic naming the plugin.
    """


@registration_spec()
def register_virtual_models(register: RegisterVirtualModel) -> None:
    """Register virtual models (pi's ``registerVirtualModel``): selectable models that
    route each request to a physical model and thinking level.

    **Fires** once per session runtime, after ``register_providers``, before the model is
    chosen: a virtual model is selected like any other (``--model router/auto``,
    ``/model``, settings) and ``pi --list-models`` lists it.

    **Call** ``register(VirtualModelDefinition(provider=..., id=..., route=...))`` (or a
    dict of its fields). Before every request made with the virtual model pi calls
    ``route(request)`` (or ``route(request, ctx)``; sync or async) with a
    :class:`~pi_hookspecs.RouteRequest` - the selected level, ``reason`` (``user``,
    ``continuation``, ``retry``, ``direct``), ``previous`` and ``failed`` physical models,
    router ``state``, the messages, and ``models`` to look models up - and sends the
    request to the :class:`~pi_hookspecs.Route` it returns: a physical model of the
    catalogue whose provider has credentials, and a thinking level (clamped to that
    model). Providers only ever see physical models; assistant messages name the
    physical model and level, ``model_change`` entries the selection, and a ``state``
    the router returns is kept on the session branch (``custom`` entries of type
    ``pi.virtual-model-state``). Resuming restores the virtual selection; when the
    virtual model is no longer registered pi falls back to the physical model that
    answered last. Registering the same ``provider/id`` again replaces it.

    A router that sends quick questions to a small model and hard ones (the ``high``
    level) to a large one, and keeps tool follow-ups and retries on the model of the turn
    (so prompt caches stay valid):

    ```python
    from pi_hookspecs import Route, VirtualModelDefinition, hookimpl


    class AutoRouter:
        def __init__(self, small="anthropic/claude-haiku-4-5", large="anthropic/claude-sonnet-4-5"):
            self.small, self.large = small, large

        @hookimpl
        def register_virtual_models(self, register):
            register(
                VirtualModelDefinition(
                    provider="router", id="auto", name="Auto", thinking_levels=["low", "high"], route=self.route
                )
            )

        def route(self, request):
            sticky = request.failed or request.previous
            if request.reason != "user" and sticky is not None:
                return Route(model=sticky.model, thinking_level=sticky.thinking_level)
            turns = (request.state or {}).get("turns", 0) + 1
            target = self.large if request.thinking_level == "high" else self.small
            return Route(model=target, thinking_level="off", state={"turns": turns})


    def test_auto_router(pi):
        pi.use(AutoRouter(small="faux/offline-demo", large="faux/offline-demo"))
        auto = pi.session.models.get("router", "auto")
        assert pi.run(pi.session.set_model(auto))
        run = pi.prompt("what is here?")  # the demo model runs ls, then answers
        assert [m.model for m in run.messages if m.role == "assistant"] == ["offline-demo"] * 2
        assert pi.session.model.ref == "router/auto"  # the selection stays virtual
        entries = pi.session_entries()
        assert [e["modelId"] for e in entries if e["type"] == "model_change"][-1] == "auto"
        states = [e["data"]["state"] for e in entries if e["type"] == "custom"]
        assert states == [{"turns": 1}]  # the continuation after ls kept its route and state
    ```

    A route that raises, names a model that is not a physical one of the catalogue, or
    one without credentials ends that request with an error response naming the virtual
    model; the session goes on.

    **Errors**: an invalid definition, a virtual model whose id is one of the provider's
    physical models, or an exception in the hook is a diagnostic naming the plugin; the
    other registrations stand.
    """


@registration_spec()
def register_cli_commands(register: RegisterCliCommand) -> None:
    """Register subcommands of the ``pi`` command line (``pi mcp list`` …).

    **Fires** when ``pi`` is started with a first argument that is not one of its own
    subcommands, options or prompts, before any session exists (only plugins that are
    not the project's own take part).

    **Call** ``register(name, main, help="...")``: ``pi NAME ARGS...`` calls
    ``main(args)`` with the remaining arguments (a list of strings); it returns the exit
    status (an int, ``None`` for 0) and may be a coroutine function. Parse the arguments
    with any library. The first plugin to register a name keeps it. (A command whose
    start-up time matters may also declare the same ``main`` in its distribution's
    ``pi.cli_commands`` entry-point group: ``pi NAME`` looks there first and calls it
    without loading any plugin.)

    **Errors**: a failing registration is reported as a diagnostic naming the plugin; an
    exception in ``main`` is printed and ``pi`` exits with status 1.
    """


@registration_spec()
def register_shortcuts(register: RegisterShortcut) -> None:
    """Register keys of interactive mode (pi's ``registerShortcut``).

    **Fires** once per session runtime, in plugin load order.

    **Call** ``register("ctrl+shift+p", handler, description="...")`` or
    ``register(ShortcutDefinition(...))``. ``handler(ctx)`` gets a
    :class:`CommandContext` and may be async. Keys use pi's notation (``ctrl+x``,
    ``alt+up``, ``shift+tab``, ``f5``); ``/hotkeys`` lists them. The first plugin to
    register a key keeps it; a key that ``keybindings.json`` gives to one of pi's
    actions stays pi's.

    **Errors**: an invalid key or a failing registration is a diagnostic naming the
    plugin; an exception in ``handler`` is printed in the transcript.
    """


@registration_spec()
def register_message_renderers(register: RegisterRenderer) -> None:
    """Draw custom messages of a ``custom_type`` (pi's ``registerMessageRenderer``).

    **Fires** once per session runtime, in plugin load order.

    **Call** ``register(custom_type, render)``: ``render(message, options)`` gets the
    :class:`CustomMessage` and ``{"expanded": bool}`` (Ctrl+O) and returns text, a list
    of lines, a ``rich`` renderable, or ``None`` for pi's own drawing. The first plugin
    to register a type keeps it.

    **Errors**: a failing registration is a diagnostic; an exception in ``render`` is
    shown in place of the message, which pi then draws itself.
    """


@registration_spec()
def register_entry_renderers(register: RegisterRenderer) -> None:
    """Draw custom entries (``ctx.append_entry``) of a ``custom_type`` in the transcript
    (pi's ``registerEntryRenderer``); without a renderer they are not shown.

    **Fires** once per session runtime, in plugin load order.

    **Call** ``register(custom_type, render)``: ``render(entry, options)`` gets the
    :class:`CustomEntry` and ``{"expanded": bool}`` and returns text, lines, a ``rich``
    renderable, or ``None`` (not shown). Drawn when the entry is appended and when the
    session is replayed.

    **Errors**: as for message renderers.
    """


@registration_spec()
def register_tool_renderers(register: RegisterToolRenderer) -> None:
    """Choose how tool calls and results are drawn (pi's ``registerToolRenderer``).

    **Fires** once per session runtime, in plugin load order.

    **Call** ``register(resolve)``: ``resolve(tool_name, next)`` returns an object or
    dict with optional ``render_call(args, options)`` and
    ``render_result(result, options)``, or ``next()`` (the choice of the resolvers after
    it), so ``next() or mine`` only fills in. Renders return text, lines, a ``rich``
    renderable, or ``None`` for pi's own drawing; ``options`` holds ``expanded`` and,
    for results, ``is_error``.

    **Errors**: an exception in a resolver or a render is shown once in red and pi
    draws that call itself.
    """


@registration_spec()
def register_markdown_transformers(register: RegisterMarkdownTransformer) -> None:
    """Change markdown before interactive mode renders it (pi's
    ``registerMarkdownTransformer``).

    **Fires** once per session runtime, in plugin load order.

    **Call** ``register(transform, message_types=[...])``: ``transform(markdown,
    context)`` gets the markdown and a :class:`MarkdownTransformContext`
    (``message_type``, ``is_streaming``, ``available_width``, ``message_id``,
    ``timestamp``) and returns the markdown to render. ``message_types`` names the
    surfaces it runs on (:data:`MarkdownMessageType`; default ``user``, ``assistant``,
    ``assistant-thinking``). A plugin has one transformer: registering again replaces
    it. The transformers run in plugin load order, each on the previous one's output; the
    session and what the model sees keep the original text. They run for every message
    drawn, for each redraw of a streaming answer and for replayed sessions: keep them
    synchronous and quick. Print, json and RPC modes and the HTML export do not use them.

    Arrows in finished answers, and ``:warning:`` shortcodes in the changelog:

    ```python
    from pi_hookspecs import MarkdownTransformContext, hookimpl


    class Typography:
        @hookimpl
        def register_markdown_transformers(self, register):
            register(self.transform, message_types=["assistant", "changelog"])

        def transform(self, markdown, context):
            if context.message_type == "changelog":
                return markdown.replace(":warning:", "⚠")
            if context.is_streaming:  # an unfinished "--" may become "-->" in the next redraw
                return markdown
            return markdown.replace("-->", "→")


    def test_typography(pi):
        pi.use(Typography())
        assert pi.diagnostics == []
        answer = MarkdownTransformContext(message_type="assistant", available_width=80)
        assert Typography().transform("a --> b", answer) == "a → b"
        streaming = MarkdownTransformContext(message_type="assistant", is_streaming=True, available_width=80)
        assert Typography().transform("a --> b", streaming) == "a --> b"
        pi.script("use a --> b")
        assert pi.prompt("how?").text == "use a --> b"  # the session keeps the original text
    ```

    **Errors**: a failing registration is a diagnostic naming the plugin. A transformer
    that raises or returns something other than a string is reported once in one line
    naming the plugin; the markdown produced so far is kept and the next transformer runs.
    """


@registration_spec()
def register_mcp_servers(register: RegisterMcpServer) -> None:
    """Add MCP servers to the session (pi's ``registerMcpServer``).

    **Fires** once per session runtime, in plugin load order, before ``session_start``.

    **Call** ``register(name, config)`` with a server name (letters, digits, ``_`` and
    ``-``) and a dict shaped like an ``mcpServers`` entry of ``mcp.json`` (``command``,
    ``args``, ``env``, ``cwd`` or ``url``, ``headers``, ``oauth``, plus ``exposure``,
    ``toolExposure``, ``description``, ``enabled``, ``timeout``). Registrations are not
    saved: register on every load. Registering a name again replaces your earlier
    server. The MCP plugin (pluggable-pi-mcp) connects them next to the ``mcp.json``
    servers, which win over a registration of the same name. Later in the session use
    ``ctx.register_mcp_server(name, config)`` and ``ctx.unregister_mcp_server(name)``;
    ``ctx.get_mcp_servers()`` lists every registration (:class:`McpServerRegistration`).

    A team's ticket server, with a command that disconnects it for the rest of the session:

    ```python
    from pi_hookspecs import hookimpl


    class TeamServers:
        @hookimpl
        def register_mcp_servers(self, register):
            register("tickets", {"url": "https://mcp.example.com/tickets", "exposure": "deferred"})

        @hookimpl
        def register_commands(self, register):
            register("tickets-off", self.off, description="Disconnect the tickets MCP server")

        def off(self, args, ctx):
            removed = ctx.unregister_mcp_server("tickets")
            ctx.ui.notify("tickets server disconnected" if removed else "no tickets server")


    def test_team_servers(pi):
        listed = []

        class Lister:
            @hookimpl
            def session_start(self, ctx):
                listed.extend((server.name, server.plugin) for server in ctx.get_mcp_servers())

        pi.use(TeamServers(), Lister())
        pi.prompt("/tickets-off")
        assert listed == [("tickets", "TeamServers")]
        assert pi.ui.notifications == [("info", "tickets server disconnected")]
        # this test loads no MCP plugin: the registration is reported, naming the plugin
        [error] = pi.plugin_errors
        assert error.plugin == "TeamServers" and 'MCP server "tickets" is not connected' in error.message
    ```

    **Errors**: ``register`` raises ``ValueError`` for an invalid name, a config that is
    neither a stdio (``command``) nor an HTTP (``url``) server, or a name another plugin
    registered; an exception escaping the hook is a diagnostic naming the plugin, and
    the servers registered before it stand. When no loaded plugin connects MCP servers
    (none implements ``mcp_servers_change``), each registration is reported as an error
    naming its plugin at ``session_start``.
    """


@registration_spec()
def add_hookspecs(add: AddHookspecs) -> None:
    """Publish hook specifications of a plugin's own.

    **Fires** right after all plugins are registered, before anything is called.

    **Call** ``add(module_or_class)`` holding functions marked with
    ``pi_hookspecs.hookspec``. Other plugins then implement them, and the publishing
    plugin calls them through ``ctx.hook.<name>(...)``: pluggy's own calling convention
    (keyword arguments), result list and wrappers; the list can be awaited (coroutines
    awaited), as pi's events can. A function declared with ``@event_spec`` (a rule and a composition, see
    :mod:`pi_hookspecs.compose`) is an event: ``ctx.hook`` calls it through pi's runner,
    exactly as pi's own.

    **Errors**: reported as a diagnostic naming the plugin.
    """


# =============================================================================== startup


# ------------------------------------------------------------ how some gates decide


def _file_answered(event: "FileAccessEvent", result: "FileAccessResult") -> bool:
    """A ``file_access`` result answers the access: a read with the file's text, a
    write done (``handled``); anything else lets the next handler (or pi) do it."""
    return result.content is not None if event.operation == "read" else bool(result.handled)


def _check_file_answer(event: "FileAccessEvent", result: "FileAccessResult") -> None:
    if event.operation == "read" and result.content is None and result.handled:
        raise ValueError("a read needs the file's text in content")
    if event.operation == "write" and not result.handled and result.content is not None:
        raise ValueError("a write is answered with handled=True, not content")


def _check_user_bash_answer(event: Any, result: Any) -> None:
    has_ops, has_result = result.operations is not None, result.result is not None
    if has_ops == has_result:
        raise ValueError("handler must return exactly one of operations or result")
    if has_ops and not callable(getattr(result.operations, "exec", None)):
        raise ValueError("handler returned operations without an exec() method")


@event_spec(
    Rule.GATE,
    group="Startup and resources",
    compose=DecidingGate(
        lambda event, result: result.trusted in ("yes", "no"),
        outcome=None,
        summary="the first `yes` or `no` decides",
    ),
)
def project_trust(event: "ProjectTrustEvent", ctx: ProjectTrustContext) -> "ProjectTrustResult | None":
    """Decide whether the project in ``event.cwd`` is trusted.

    **Fires** at startup (and when a session replacement enters a new working
    directory) before any project resource loads, and only when the project has
    resources that need trust (``.pi/settings.json``, ``.pi/extensions`` …). Only
    plugins that are not project plugins take part. ``ctx`` is a limited
    :class:`ProjectTrustContext` (cwd, mode, ui).

    **Returns** :class:`ProjectTrustResult`: ``trusted`` ``"yes"``, ``"no"`` or
    ``"undecided"``, and ``remember`` to save a yes/no decision.

    **Combination** (gate): the first ``"yes"`` or ``"no"`` decides and stops the walk;
    ``"undecided"`` or ``None`` passes to the next handler, then to the saved decisions
    and ``defaultProjectTrust``.

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.AGGREGATE, group="Startup and resources")
def resources_discover(event: ResourcesDiscoverEvent, ctx: ExtensionContext) -> ResourcesDiscoverResult | None:
    """Contribute skill, prompt-template and theme paths.

    **Fires** after ``session_start`` (``event.reason`` ``"startup"``) and after a
    reload (``"reload"``).

    **Returns** :class:`ResourcesDiscoverResult` (``skill_paths``, ``prompt_paths``,
    ``theme_paths``) or ``None``.

    **Combination** (aggregate): all results are collected in call order; paths
    earlier in the list win name collisions.

    **Errors**: reported; the other handlers' paths still load.
    """


# =============================================================================== session


@event_spec(Rule.NOTIFICATION, group="Session")
def session_start(event: SessionStartEvent, ctx: ExtensionContext) -> None:
    """A session runtime started.

    **Fires** when a session is started, loaded or reloaded; ``event.reason`` is
    ``"startup"``, ``"reload"``, ``"new"``, ``"resume"`` or ``"fork"`` and
    ``event.previous_session_file`` names the session left behind. Start
    session-scoped resources (connections, watchers) here, not at import.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Session")
def session_shutdown(event: SessionShutdownEvent, ctx: ExtensionContext) -> None:
    """A session runtime is about to be torn down.

    **Fires** before quit, reload, new, resume and fork (``event.reason``);
    ``event.target_session_file`` names the destination of a replacement. Close what
    ``session_start`` opened; make it idempotent.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs and the shutdown goes on.
    """


@event_spec(Rule.NOTIFICATION, group="Session")
def session_info_changed(event: "SessionInfoChangedEvent", ctx: ExtensionContext) -> None:
    """The session's display name changed (``event.name``; ``None`` when cleared).

    **Fires** after ``/name``, RPC ``set_session_name`` or ``ctx.set_session_name()``.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Session")
def mcp_servers_change(event: "McpServersChangeEvent", ctx: ExtensionContext) -> None:
    """A plugin registered or unregistered an MCP server after the session started
    (``ctx.register_mcp_server``, ``ctx.unregister_mcp_server``): ``event.servers`` lists
    every server plugins registered, after the change.

    **Fires** after each change, from the session's start on; servers registered while
    the plugins load are read with ``ctx.get_mcp_servers()`` at ``session_start``.
    Implementing it makes a plugin one that connects registered servers: pluggable-pi-mcp
    connects new ones right away and closes removed ones, whose tools become unreachable.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Session")
def ui_prompt_start(event: "UiPromptStartEvent", ctx: ExtensionContext) -> None:
    """A plugin's dialog (``ctx.ui.select``, ``confirm``, ``input``, ``editor``) waits
    for the user: ``event.kind`` and ``event.title``. Nested dialogs make one span.

    **Fires** in interactive and RPC modes, before the dialog shows; handlers are not
    awaited before it does.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Session")
def ui_prompt_end(event: "UiPromptEndEvent", ctx: ExtensionContext) -> None:
    """pi no longer waits on the dialog span ``ui_prompt_start`` opened.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.CANCELLABLE, group="Session")
def session_before_switch(
    event: "SessionBeforeSwitchEvent", ctx: ExtensionContext
) -> "SessionBeforeSwitchResult | None":
    """A new session (``/new``) or another session (``/resume``) is about to replace
    the current one.

    **Fires** before the switch; ``event.reason`` is ``"new"`` or ``"resume"`` and
    ``event.target_session_file`` names the session resumed.

    **Returns** :class:`SessionBeforeSwitchResult` (``cancel=True`` to stop the switch)
    or ``None``.

    **Combination** (cancellable): the first ``cancel`` wins and stops the walk;
    otherwise the last non-empty result is the result.

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.CANCELLABLE, group="Session")
def session_before_fork(event: "SessionBeforeForkEvent", ctx: ExtensionContext) -> "SessionBeforeForkResult | None":
    """A fork (``/fork``, ``position="before"``) or clone (``position="at"``) of
    ``event.entry_id`` into a new session file is about to happen.

    **Returns** :class:`SessionBeforeForkResult` (``cancel``,
    ``skip_conversation_restore``) or ``None``.

    **Combination** (cancellable): the first ``cancel`` wins; otherwise the last
    non-empty result replaces the whole result.

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.CANCELLABLE, group="Session")
def session_before_compact(
    event: "SessionBeforeCompactEvent", ctx: ExtensionContext
) -> "SessionBeforeCompactResult | None":
    """Compaction is about to summarise the older part of the context.

    **Fires** before ``/compact``, threshold compaction and overflow recovery
    (``event.reason`` ``"manual"``, ``"threshold"``, ``"overflow"``), with
    ``event.preparation`` (messages to summarise, first kept entry, tokens before,
    previous summary, file operations), ``event.branch_entries`` and ``event.signal``.

    **Returns** :class:`SessionBeforeCompactResult`: ``cancel=True``, or
    ``compaction=CompactionResult(summary=..., first_kept_entry_id=..., tokens_before=...)``
    to supply the summary instead of pi's summariser; or ``None``.

    **Combination** (cancellable): the first ``cancel`` wins and stops the walk;
    otherwise the **last non-empty result replaces the whole result** (a later
    ``{"cancel": False}`` discards an earlier handler's compaction).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Session")
def session_compact(event: "SessionCompactEvent", ctx: ExtensionContext) -> None:
    """A compaction was saved (``event.compaction_entry``; ``event.from_extension``
    tells whether a plugin supplied it).

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Session")
def session_compact_failed(event: "SessionCompactFailedEvent", ctx: ExtensionContext) -> None:
    """A compaction failed (``event.error_message``) or was aborted (``event.aborted``).

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.CANCELLABLE, group="Session")
def session_before_tree(event: "SessionBeforeTreeEvent", ctx: ExtensionContext) -> "SessionBeforeTreeResult | None":
    """Tree navigation (``/tree``) is about to move the session's leaf.

    **Fires** with ``event.preparation`` (target, old leaf, common ancestor, the entries
    a branch summary would cover, whether the user wants one) and ``event.signal``.

    **Returns** :class:`SessionBeforeTreeResult`: ``cancel=True``; or ``summary`` (used
    when the user asked for a summary); or changed ``custom_instructions``,
    ``replace_instructions``, ``label``; or ``None``.

    **Combination** (cancellable): the first ``cancel`` wins; otherwise the last
    non-empty result replaces the whole result.

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Session")
def session_tree(event: "SessionTreeEvent", ctx: ExtensionContext) -> None:
    """The leaf moved (``event.new_leaf_id``, ``event.old_leaf_id``,
    ``event.summary_entry``). Rebuild branch-dependent state from
    ``ctx.session_manager.get_branch()``.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


# =============================================================================== agent runs


@event_spec(
    Rule.AGGREGATE,
    group="Agent runs",
    compose=Aggregate(chains="system_prompt", changes=("message", "system_prompt")),
    in_place=True,
)
def before_agent_start(event: BeforeAgentStartEvent, ctx: ExtensionContext) -> BeforeAgentStartResult | None:
    """A run is about to start, after input handling and template expansion.

    **Fires** once per prompt (``event.message_type`` ``"user"`` with ``prompt`` and
    ``images``) or per idle ``send_message(..., trigger_turn=True)`` (``"custom"`` with
    ``message``). ``event.system_prompt`` is the prompt as chained so far and
    ``event.system_prompt_options`` the structured inputs it is built from — change
    those **in place** (sections, selected tools, guidelines) and pi patches only the
    changed sections.

    **Returns** :class:`BeforeAgentStartResult`: ``message`` (a custom message added to
    the run) and/or ``system_prompt`` (replaces the whole prompt for this run); or
    ``None``.

    **Combination** (aggregate): every returned ``message`` is added, in call order;
    ``system_prompt`` chains — the next handler sees it as ``event.system_prompt``.

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Agent runs")
def agent_start(event: AgentStartEvent, ctx: ExtensionContext) -> None:
    """A low-level agent run began.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Agent runs")
def agent_end(event: AgentEndEvent, ctx: ExtensionContext) -> None:
    """A low-level agent run ended (``event.messages`` are the messages it produced).
    pi may still retry, compact and retry, or continue with queued messages; wait for
    ``agent_settled`` for the final idle point.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.BOUNDARY, group="Agent runs")
def agent_before_settle(event: AgentBeforeSettleEvent, ctx: ExtensionContext) -> BoundaryResult | None:
    """The last actionable point before pi settles.

    **Fires** after retries, recovery and queued work are done (not after an abort).
    ``event.entries`` and ``event.continue_`` are what earlier handlers proposed;
    ``event.context`` previews the context with those entries appended
    (:class:`BoundaryContext`: ``context_entries``, ``context_messages``,
    ``llm_messages``, ``pending_messages``, ``can_continue``); ``event.outcome`` is how
    the run's last activity ended. A ``continue_`` the preview cannot run is reported
    and dropped.

    **Returns** :class:`BoundaryResult`: ``entries`` (draft ``custom``,
    ``custom_message``, ``context_edit`` or ``compaction`` entries to append) and/or
    ``continue_`` (``True`` asks for one more model request); or ``None``.

    **Combination** (boundary): each returned field replaces the proposal so far; an
    omitted field keeps it. The final proposal is validated and appended in order.
    Guard ``continue_``: an unconditional ``True`` loops forever.

    **Errors**: reported; that handler's draft is dropped and the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Agent runs")
def agent_settled(event: AgentSettledEvent, ctx: ExtensionContext) -> None:
    """pi will not continue on its own (``event.aborted`` when the run was aborted).
    Fires once per prompt, also after errors and aborts; ``ctx.is_idle()`` is true.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Agent runs")
def turn_start(event: TurnStartEvent, ctx: ExtensionContext) -> None:
    """A turn (one model response and its tool calls) began (``event.turn_index``).

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.BOUNDARY, group="Agent runs")
def turn_end(event: TurnEndEvent, ctx: ExtensionContext) -> BoundaryResult | None:
    """A turn finished; its assistant message and tool results are already persisted.

    **Fires** with ``event.message``, ``event.tool_results``, their entry ids,
    ``event.outcome`` (``"completed"``, ``"error"``, ``"aborted"``) and the proposal so
    far (``event.entries``, ``event.continue_``, and ``event.context``, the
    :class:`BoundaryContext` preview of the context with those entries appended).

    **Returns** :class:`BoundaryResult` (``entries`` and/or ``continue_``) or ``None``.

    **Combination** (boundary): each returned field replaces the proposal so far; the
    final proposal is validated and appended after all handlers ran. ``continue_``
    ensures one more request unless tool results or queued messages already cause one.

    **Errors**: reported; that handler's draft is dropped and the next handler runs.
    """


# =============================================================================== messages


@event_spec(Rule.NOTIFICATION, group="Messages")
def message_start(event: MessageStartEvent, ctx: ExtensionContext) -> None:
    """A message started (user, assistant, tool result, custom …); ``event.message``.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Messages")
def message_update(event: MessageUpdateEvent, ctx: ExtensionContext) -> None:
    """An assistant message streamed an update: ``event.message`` is the partial
    message, ``event.assistant_message_event`` the stream event (text / thinking /
    tool-call delta). Keep handlers fast: they are awaited in stream order.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.CHAINED, group="Messages", compose=Chained("message", keep=("role",)), in_place=True)
def message_end(event: MessageEndEvent, ctx: ExtensionContext) -> MessageEndResult | None:
    """A message is final and about to be persisted (``event.message``).

    **Returns** :class:`MessageEndResult` (``message``: a replacement with the same
    ``role``) or ``None``. The replacement is applied in place, so the agent state, the
    host and the session file agree.

    **Combination** (chained): each handler sees the previous handler's replacement.

    **Errors**: reported (also a replacement that changes the role); the previous
    message is kept.
    """


# =============================================================================== tools


@event_spec(Rule.NOTIFICATION, group="Tools")
def tool_execution_start(event: ToolExecutionStartEvent, ctx: ExtensionContext) -> None:
    """A tool call is about to be processed (``event.tool_call_id``, ``tool_name``,
    ``args``, ``parent_tool_call_id`` for nested calls). With parallel tools these fire
    in the assistant message's order.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Tools")
def tool_execution_update(event: ToolExecutionUpdateEvent, ctx: ExtensionContext) -> None:
    """A running tool reported progress (``event.partial_result``).

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Tools")
def tool_execution_end(event: ToolExecutionEndEvent, ctx: ExtensionContext) -> None:
    """A tool call is final (``event.result``, ``event.is_error``,
    ``event.duration_ms`` when the tool ran). Fires for every call, also unknown,
    invalid, blocked and aborted ones; in completion order with parallel tools.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.GATE, group="Tools", fail_closed=True, compose=BlockingGate(), in_place=True)
def tool_call(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
    """A tool is about to run: the policy gate.

    **Fires** after argument validation, before execution (also for nested calls made
    through ``ctx.execute_tool``). The assistant message holding the call is already
    persisted. ``event.input`` is **mutable**: change it in place and later handlers and
    the tool see the change (it is not validated again).

    **Returns** :class:`ToolCallResult` — ``block=True`` with a ``reason`` (and
    ``terminate=True`` to end the run after this batch) — or ``None`` to allow.

    **Combination** (gate): the first ``block`` wins and stops the walk; a later
    handler cannot unblock it.

    **Errors** fail **closed**: an exception (or an invalid return value) blocks the
    call, with a reason naming the plugin.
    """


@event_spec(
    Rule.CHAINED,
    group="Tools",
    compose=Patched(
        "content",
        "structured_content",
        "details",
        "is_error",
        "usage",
        nullable=("structured_content", "details", "usage"),
        clears={"content": "structured_content"},
    ),
    in_place=True,
)
def tool_result(event: "ToolResultEvent", ctx: ExtensionContext) -> "ToolResultPatch | None":
    """A tool finished; its result may be changed before the model sees it.

    **Fires** after a tool ran (successfully, with ``is_error``, or raising), with the
    result's ``content``, ``details``, ``structured_content``, ``is_error`` and
    ``usage``. Not for calls that never ran (unknown, invalid, blocked).

    **Returns** :class:`ToolResultPatch`: any of ``content``, ``details``,
    ``structured_content``, ``is_error``, ``usage``; or ``None``.

    **Combination** (chained, field by field): each handler sees the result as patched
    so far; a field it does not return keeps its value. Replacing ``content`` without
    ``structured_content`` drops the structured content.

    **Errors**: reported; the result as patched so far is kept.
    """


@event_spec(Rule.GATE, group="Tools", fail_closed=True, compose=BlockingGate(blocked=True), in_place=True)
def bash_spawn(event: "BashSpawnEvent", ctx: ExtensionContext) -> "BashSpawnResult | None":
    """A shell command is about to start as a local process: change how it starts.

    **Fires** for every command pi's own shell runner starts: each ``bash`` tool call
    (``event.source == "tool"``, with ``event.tool_call_id``; also nested calls made
    through ``ctx.execute_tool``, e.g. by codemode scripts), and each ``!command`` /
    ``!!command`` of the user (``"user"``) that no ``user_bash`` handler took over.
    ``event.command`` is the command as given; ``event.argv`` (``[shell, "-c", ...]``),
    ``event.env`` (the whole environment), ``event.cwd`` and ``event.pass_fds`` are what
    pi will start. It does not fire when no plugin implements it.

    **Mutate** ``event.argv``, ``event.env`` and ``event.pass_fds`` in place (wrap the
    command in a sandbox launcher, filter the environment, hand the child a file
    descriptor); later handlers see the changes and the process starts with what the
    last handler left. Append zero-argument callables (sync or async) to
    ``event.on_exit``: pi calls each once the process has exited, or when it never
    started (blocked, failed to start). To run the command somewhere else than a local
    process (an editor's terminal: pluggable-pi-acp), set ``event.launch`` to an async callable
    ``launch(event, on_data) -> int``: pi calls it instead of starting ``event.argv``,
    with ``on_data(chunk: bytes)`` for the output, and takes its return value as the exit
    status (negative: killed by that signal). On abort or timeout pi cancels the call:
    the launcher must stop the command then. The last handler's ``launch`` wins; it
    sees the ``argv`` and ``env`` every handler left (a sandbox's wrapper included).
    **Returns** :class:`BashSpawnResult` with ``block=True`` and a ``reason`` to refuse
    the command, or ``None``.

    **Combination** (gate): the first ``block`` stops the walk; a ``bash`` tool call
    then fails with ``Blocked: <reason>``, a user command is recorded as blocked.

    **Errors** fail **closed**: an exception (or an invalid result) is reported and the
    command does not start, so a wrapper that breaks never lets a command run unwrapped.
    """


@event_spec(
    Rule.GATE,
    group="Tools",
    fail_closed=True,
    compose=DecidingGate(
        _file_answered,
        check=_check_file_answer,
        blocks=True,
        summary="the first block, or the first handler that does the access, decides",
    ),
)
def file_access(event: "FileAccessEvent", ctx: ExtensionContext) -> "FileAccessResult | None":
    """A built-in file tool is about to read or write a file's text: serve it elsewhere.

    **Fires** when the ``read`` tool reads a text file (after pi checked locally that
    the file exists and is not an image), when ``edit`` reads the file it changes and
    writes the result, and when ``write`` writes a file; ``event.operation`` is
    ``"read"`` or ``"write"``, ``event.path`` the absolute path, ``event.content`` the
    new text of a write, with ``event.tool_name`` and ``event.tool_call_id``. It runs
    inside the file's mutation queue. Images, directory listings, ``grep`` and ``find``
    stay local (a policy that must refuse an image too checks the ``read`` tool's path
    in ``tool_call``). It does not fire when no plugin implements it.

    **Returns** :class:`FileAccessResult`: for a read, ``content`` (the text the tool
    then works on, e.g. an editor's unsaved buffer); for a write, ``handled=True`` once
    the handler has written ``event.content`` (e.g. through an editor, which shows the
    change); ``block=True`` with a ``reason`` to refuse the operation (a policy, e.g.
    pluggable-pi-sandbox's protected and denied paths). ``None`` lets the next handler,
    then the local file system, do it.

    **Combination** (gate): the first valid result stops the walk. A block wins over
    ``content`` / ``handled`` in the same result; the tool then fails with the
    ``reason`` as its error (``blocked by plugin '<name>'`` without one), and nothing is
    read or written. A gate that must not be bypassed by a handler serving the file
    (an editor) is ``tryfirst``.

    **Errors** fail **closed**: an exception, or a read result without ``content`` or a
    write result without ``handled``, is reported and the tool fails with a message
    naming the plugin (pi never falls back to the local file behind its back).
    """


# =============================================================================== model requests


@event_spec(Rule.CHAINED, group="Model requests", compose=Chained("messages"))
def context(event: "ContextEvent", ctx: ExtensionContext) -> "ContextResult | None":
    """The conversation of the next model request, without system messages
    (``event.messages``, a copy that is safe to change).

    **Returns** :class:`ContextResult` (``messages``) or ``None``. pi puts the current
    prompt and tool declarations back in front of a changed list.

    **Combination** (chained): each handler gets the previous handler's messages.

    **Errors**: reported; the previous messages are kept.
    """


@event_spec(Rule.CHAINED, group="Model requests", compose=Chained("messages"))
def context_with_system(event: "ContextWithSystemEvent", ctx: ExtensionContext) -> "ContextWithSystemResult | None":
    """The full transcript of the next request, system messages included.

    **Fires** after every ``context`` handler. Keep a system message at index 0.

    **Returns** :class:`ContextWithSystemResult` (``messages``, sent as they are) or
    ``None``.

    **Combination** (chained).

    **Errors**: reported; the previous messages are kept.
    """


@event_spec(Rule.MUTATION, group="Model requests", in_place=True)
def before_provider_headers(event: "BeforeProviderHeadersEvent", ctx: ExtensionContext) -> None:
    """The HTTP headers of a provider request are assembled.

    **Mutate** ``event.headers`` in place: set a key to add or override a header, set
    it to ``None`` to remove it. Fires once per request (retries reuse the headers).

    **Returns** nothing (in-place mutation: later handlers see the changes).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.CHAINED, group="Model requests", compose=Chained("payload"))
def before_provider_request(
    event: "BeforeProviderRequestEvent", ctx: ExtensionContext
) -> "BeforeProviderRequestResult | None":
    """The provider payload is built and about to be sent (``event.payload``).

    **Returns** :class:`BeforeProviderRequestResult` (``payload``, replacing it) or
    ``None`` to keep it.

    **Combination** (chained): later handlers and the request see the replacement.

    **Errors**: reported; the previous payload is kept.
    """


@event_spec(Rule.NOTIFICATION, group="Model requests")
def after_provider_response(event: AfterProviderResponseEvent, ctx: ExtensionContext) -> None:
    """A provider answered (``event.status``, ``event.headers``), before the body
    stream is consumed.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Model requests")
def provider_stream_event(event: "ProviderStreamEvent", ctx: ExtensionContext) -> None:
    """One parsed provider stream event (``event.data``, read-only), before pi
    normalises it. Handlers are awaited in stream order: slow ones delay the stream.

    **Returns** nothing (notification).

    **Errors**: reported; the stream goes on.
    """


@event_spec(Rule.NOTIFICATION, group="Model requests")
def model_select(event: "ModelSelectEvent", ctx: ExtensionContext) -> None:
    """The model changed (``event.model``, ``event.previous_model``, ``event.source``
    ``"set"`` or ``"cycle"``). Restoring a session does not fire it.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.NOTIFICATION, group="Model requests")
def thinking_level_select(event: "ThinkingLevelSelectEvent", ctx: ExtensionContext) -> None:
    """The thinking level changed (``event.level``, ``event.previous_level``).

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs.
    """


@event_spec(Rule.AGGREGATE, group="Model requests")
def cache_warming_decision(
    event: "CacheWarmingDecisionEvent", ctx: ExtensionContext
) -> "CacheWarmingDecisionResult | None":
    """pi is about to refresh the prompt cache of the last request (the ``cacheWarming``
    setting) and says what it decided: ``event.action`` (``"warm"`` or ``"stop"``) from
    ``event.warm_cost``, ``event.miss_cost`` and ``event.continuation_probability``. Use
    ``ctx.model`` and ``ctx.get_context_usage()`` for anything else.

    **Returns** :class:`CacheWarmingDecisionResult` with ``action`` to override pi's
    decision (``"stop"`` ends warming until the next real request), or ``None``.

    **Combination** (last override): every handler runs; the last one that returns an
    action decides.

    **Errors**: reported; pi's own decision stands.
    """


# =============================================================================== user input


@event_spec(
    Rule.GATE,
    group="User input",
    fail_closed=True,
    compose=DecidingGate(
        lambda event, result: True,
        check=_check_user_bash_answer,
        summary="the first handler that answers runs the command",
    ),
)
def user_bash(event: "UserBashEvent", ctx: ExtensionContext) -> "UserBashResult | None":
    """The user ran ``!command`` (or ``!!command``, ``event.exclude_from_context``).

    **Returns** :class:`UserBashResult` with either ``operations`` (run the command
    through that backend, e.g. over SSH) or ``result`` (record this outcome without
    running anything); or ``None`` to let the next handler, then local execution, run it.

    **Combination** (gate): the first valid result stops the walk.

    **Errors** fail **closed**: an exception or an invalid result is reported and the
    command is not run (no fallback to local execution).
    """


@event_spec(Rule.CHAINED, group="User input", compose=Actions(InputResult, "text", "images"), in_place=True)
def input(event: InputEvent, ctx: ExtensionContext) -> InputResult | None:
    """User input arrived (``event.text``, ``event.images``, ``event.source``,
    ``event.streaming_behavior``), after extension commands were checked and before
    ``/skill:`` and template expansion.

    **Returns** :class:`InputResult`: ``action="continue"`` (default, also ``None``),
    ``action="transform"`` with new ``text`` / ``images``, or ``action="handled"`` to
    consume the input without a model run.

    **Combination** (chained): transforms chain (``"X"`` -> ``"X[1]"`` -> ``"X[1][2]"``);
    the first ``handled`` stops the walk.

    **Errors**: reported; the text as transformed so far is kept and the chain goes on.
    """


# =============================================================================== observing plugins


@event_spec(Rule.NOTIFICATION, group="Observing plugins")
def hook_outcome(event: "HookOutcomeEvent", ctx: ExtensionContext) -> None:
    """A handler of another event changed its course: it blocked, transformed, handled
    or cancelled it, or it failed. For audit and telemetry plugins (pluggable-pi-otel records each
    one as a span event naming the plugin).

    **Fires** right after that handler returned (or raised), before the next handler of
    the event runs, with ``event.hook`` (the event's name), ``event.plugin`` (whose
    handler acted), ``event.outcome``, ``event.message`` (the block reason or the error)
    and ``event.tool_call_id`` when the event concerns a tool call. ``event.outcome`` is:

    * ``"blocked"``: a ``tool_call`` handler blocked the call, a ``bash_spawn``
      handler the command, or a ``file_access`` handler the read or write;
    * ``"handled"``: an ``input`` handler consumed the input, a ``user_bash``
      handler took over the command, or a ``file_access`` handler served the read or
      write;
    * ``"cancelled"``: a ``session_before_*`` handler cancelled the operation;
    * ``"transformed"``: a handler returned a replacement or a patch (``input`` with
      ``action="transform"``, ``context``, ``context_with_system``, ``message_end``,
      ``tool_result``, ``before_provider_request``, ``before_agent_start``, a
      ``session_before_*`` result that does not cancel, a ``turn_end`` or
      ``agent_before_settle`` proposal);
    * ``"failed"``: a handler of any event raised or returned something invalid (it is
      reported as an extension error too; a fail-closed gate also blocked the operation).

    Handlers that return ``None``, changes made in place (``tool_call``'s
    ``event.input``, provider headers), ``project_trust`` decisions and
    ``resources_discover`` paths are not reported. When no plugin implements this hook
    nothing is built.

    **Returns** nothing (notification).

    **Errors**: reported; the next handler runs. A failing ``hook_outcome`` handler
    never fires ``hook_outcome`` again.
    """


# =============================================================================== derived

_CONTRACTS = [
    found for value in list(globals().values()) if callable(value) and (found := contract_of(value)) is not None
]

EVENTS: dict[str, EventSpec] = {spec.name: spec for spec in _CONTRACTS if isinstance(spec, EventSpec)}
"""Every event pi emits, with its event model, result model and composition rule, in the
order of the hookspecs above."""

REGISTRATIONS: dict[str, RegistrationSpec] = {
    spec.name: spec for spec in _CONTRACTS if isinstance(spec, RegistrationSpec)
}
"""The registration hooks, with the name and protocol of their callback argument."""

REGISTRATION_HOOKS: tuple[str, ...] = tuple(REGISTRATIONS)

HOOK_GROUPS: dict[str, list[str]] = {}
"""The sections of the hook reference and their hooks, in the order of the hookspecs."""
for _spec in _CONTRACTS:
    HOOK_GROUPS.setdefault(_spec.group, []).append(_spec.name)
del _spec
