"""Settings become objects: the engine, the tool context (workspace, sandbox policy, git,
checkpoints) and the agent with its session log and permissions. Every mode builds
through here; the agent itself only ever sees AgentSettings."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code.agent.agent_defs import agent_folders, listing, load_agent_defs
from clover_code.agent.context import Conversation
from clover_code.agent.events import ApprovalAnswered, Notice
from clover_code.agent.hooks import Hooks, parse_hooks
from clover_code.agent.instructions import load_instructions, render_skills, render_system_prompt
from clover_code.agent.loop import Agent, AgentSettings
from clover_code.agent.permissions import Approver, Permissions, sandboxed
from clover_code.agent.session import SessionLog
from clover_code.agent.subagent import TASK_TOOL, SubagentKit, TaskTool
from clover_code.config import user_config_path
from clover_code.engine import Engine, EngineError, make_engine
from clover_code.sandbox.policy import SandboxPolicy
from clover_code.settings import Settings
from clover_code.tools import Registry, ToolContext, default_registry
from clover_code.tools.skills import find_skills, skill_tool

if TYPE_CHECKING:
    from clover_code.tools.mcp.servers import McpServers

RESUMED_ALWAYS = ("Resumed without the {count} \"always\" approval(s) of the earlier run: "
                  "they are asked again (session logs live in the workspace, so they never grant permissions). "
                  "Put lasting rules in `allow` in your own config.")
MODEL_HELP = ("no model to run: pass --model DIR (a local checkpoint folder) for the embedded engine, "
              "or --endpoint URL for an OpenAI-compatible server (or set CLOVER_MODEL / CLOVER_ENDPOINT)")


def build_engine(settings: Settings, on_progress: Callable[[float, str], None] | None = None) -> Engine:
    """The engine the settings name; `on_progress(fraction, message)` follows an embedded load."""
    name = settings.engine_name()
    if name.startswith("scripted:"):
        return make_engine("scripted", replies=name.partition(":")[2])
    if name == "remote":
        return make_engine("remote", endpoint=settings.endpoint, api_key=settings.api_key, model=settings.model,
                           connect_timeout=settings.connect_timeout, idle_timeout=settings.idle_timeout)
    if name == "embedded":
        if not settings.model:
            raise EngineError(MODEL_HELP)
        return make_engine("embedded", model=settings.model, threshold=settings.threshold, policy=settings.policy,
                           block_size=settings.block_size, on_progress=on_progress,
                           checkpoint_mb=settings.checkpoint_mb, prefix_cache_mb=settings.prefix_cache_mb,
                           scaffold=settings.scaffold, draft=settings.copy_drafting)
    return make_engine(name)  # an unknown name: make_engine says which ones exist


def agent_settings(settings: Settings) -> AgentSettings:
    return AgentSettings(max_turns=settings.max_turns, max_tokens=settings.max_tokens,
                         temperature=settings.temperature, threshold=settings.threshold, policy=settings.policy,
                         approval=settings.approval)


def sandbox_policy(settings: Settings) -> SandboxPolicy:
    """What the sandbox passes on, hides and limits: from the user's config only (load_settings
    never takes these keys from a project's file)."""
    own_config = str(user_config_path().parent)  # holds the api key, wherever XDG_CONFIG_HOME puts it
    return SandboxPolicy(keep_env=tuple(settings.keep_env), inherit_env=settings.inherit_env,
                         deny_read=(*settings.deny_read, own_config),
                         max_processes=settings.max_processes, memory_mb=settings.memory_mb)


def tool_context(settings: Settings, root: Path) -> ToolContext:
    from clover_code.sandbox.gitrun import Git
    from clover_code.tools import ToolError
    from clover_code.tools.workspace import Workspace
    from clover_code.tools.workspace.checkpoints import Checkpoints

    sandbox = sandboxed(settings.approval, settings.sandbox)
    policy = sandbox_policy(settings)
    git = Git(root, sandbox=sandbox, policy=policy)  # shell and git share one sandbox policy
    try:
        git.repository()  # the repository the session starts in: a later .git pointing out is refused
    except ToolError:
        pass  # no sandbox here: the git tools will say so when used
    return ToolContext(Workspace(root), sandbox=sandbox, shell_timeout=settings.shell_timeout,
                       checkpoints=Checkpoints(root, git=git), policy=policy, git=git)


def mcp_servers(settings: Settings, root: Path) -> McpServers:
    """The user's MCP servers (not started: the agent starts them in its loop; the SDK loads
    only then, so a session without servers never loads it). Empty without any (the TUI may
    add a repository's the user allows)."""
    from clover_code.tools.mcp.servers import McpServers
    from clover_code.tools.mcp.spec import parse_servers

    return McpServers(parse_servers(settings.mcp_servers), root)


def hooks(settings: Settings, root: Path) -> Hooks | None:
    """The user's hooks (settings hold the user's config only for them); None without any."""
    return Hooks(parse_hooks(settings.hooks), root) if settings.hooks else None


def build_agent(settings: Settings, cwd: Path, approver: Approver, *, resume: str | None = None,
                engine: Engine | None = None, registry: Registry | None = None,
                on_progress: Callable[[float, str], None] | None = None) -> Agent:
    """An agent on `cwd`: engine, tools, instructions, permissions and a session log
    (a new one, or the one `resume` names: "last" or an id, replayed into the conversation).

    Permissions come from the settings alone. A resumed log's "always" answers are not
    turned back into allow rules: the log lies in the workspace, where the model's shell
    can write, so a forged line would grant whatever it names. The user is asked again."""
    root = Path(cwd).resolve()
    registry = registry or default_registry()
    session = SessionLog.open(root, resume) if resume else None  # a bad id fails before any loading
    engine = engine or build_engine(settings, on_progress)
    ctx = tool_context(settings, root)
    skills = find_skills(root)
    if skills:  # the tool only where there is a skill to load: its description costs every request
        registry = Registry([*registry.tools.values(), skill_tool(skills)])
    system = render_system_prompt(root, settings.approval, load_instructions(root).text, ctx.sandbox,
                                  render_skills([(s.name, s.description) for s in skills]))
    permissions = Permissions(settings.approval, list(settings.allow), str(root))
    engine_turns = asyncio.Lock()  # the agent's requests and its sub-agents', one at a time
    kit = SubagentKit(engine, registry, permissions, approver, system, {}, engine_turns, settings.max_tokens,
                      settings.temperature)
    trained = engine.info.trained_tools
    registry = trained_only(registry, trained)
    problems: list[str] = []
    if trained is None or TASK_TOOL in trained:
        registry, system, problems = with_subagents(root, registry, system, kit)
    conversation = Conversation(system, registry.schemas())
    past_always = 0
    if session is not None:
        for event in session.events():
            conversation.apply(event)
            past_always += isinstance(event, ApprovalAnswered) and event.answer == "always"
    else:
        session = SessionLog.create(root)
    session.redactor.add(settings.api_key)  # never written into the log (nor the env's secrets)
    agent = Agent(engine, registry, ctx, approver, agent_settings(settings), session, system,
                  permissions=permissions, conversation=conversation, engine_turns=engine_turns,
                  hooks=hooks(settings, root), mcp=mcp_servers(settings, root))
    kit.parent_turn = lambda: agent.turn_bookkeeping
    for problem in problems:
        agent.emit(Notice(f"sub-agent definition skipped: {problem}"))
    if past_always:
        agent.emit(Notice(RESUMED_ALWAYS.format(count=past_always)))
    return agent


def trained_only(registry: Registry, trained: tuple[str, ...] | None) -> Registry:
    """Only the tools the checkpoint was trained to call, when it names them (the demo model
    knows the fourteen tools of its training sessions; a todo list or a `task` tool in its
    prompt sends it astray). Clover itself names none and gets every tool."""
    if trained is None:
        return registry
    return Registry([tool for name, tool in registry.tools.items() if name in trained])


def with_subagents(root: Path, registry: Registry, system: str, kit: SubagentKit) -> tuple[Registry, str, list[str]]:
    """The registry with the `task` tool added, the system prompt listing the sub-agents it can
    run (from the user's and the repository's agents folders), and the definitions skipped."""
    defs, problems = load_agent_defs(agent_folders(root))
    kit.defs = defs
    tools = [tool for name, tool in registry.tools.items() if name != TASK_TOOL]
    listed = f"{system}\n\n# Sub-agents\nThe task tool runs one of these on a sub-task:\n{listing(defs)}"
    return Registry([*tools, TaskTool(kit)]), listed, problems
