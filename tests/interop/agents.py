#!/usr/bin/env python3
"""A2A v1.0 interop peers for the a2at test-suite, built on the official ``a2a-sdk`` 1.3.0.

Starts the agents (``echo``, ``streamer``, ``negotiator``, ``failer``, ``slow``, ...) in ONE
process, each on its own 127.0.0.1 port, each serving:

* ``GET  /.well-known/agent-card.json``  the agent card
* ``POST /a2a/jsonrpc``                   JSON-RPC binding (v1.0 method names)
* ``/a2a/rest/...``                       HTTP+JSON binding (``/a2a/rest/message:send``, ...)

and each also serving the gRPC binding (``lf.a2a.v1.A2AService``, the SDK's ``GrpcHandler`` on a
``grpc.aio`` server, plaintext HTTP/2) on a second port, advertised last in its card as a bare
``127.0.0.1:<port>`` target, the way the SDK's own examples do. Both servers of an agent share
one request handler and task store.

When every agent listens it prints exactly one line to stdout::

    READY {"echo": <card>, "streamer": <card>, ...}

(the cards exactly as served, with real URLs) and then serves until stdin reaches EOF, or
SIGTERM / SIGINT arrives, then exits (status 0). See README.md for the agents' behaviour.

Usage: ``agents.py [--base-port N] [--no-stdin] [--slow-seconds S] [--log-level LEVEL]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
import uuid

from typing import Any

import grpc
import uvicorn

from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2_grpc import add_A2AServiceServicer_to_server
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)


LOG = logging.getLogger('a2at.interop')

EXT_PREFIX = 'https://projects.tmforum.org/a2aproject/telecommunication/extensions/'
TASKT = EXT_PREFIX + 'Task-T/v1'
NEGT = EXT_PREFIX + 'Negotiation-T/v1'

JSONRPC_PATH = '/a2a/jsonrpc'
REST_PATH = '/a2a/rest'

AGENT_NAMES = ('echo', 'streamer', 'negotiator', 'failer', 'slow')

NEG_MAX_ROUNDS = 3
NEG_ROUNDS_TO_AGREE = 2
PROPOSE_TEMPLATE = 'Negotiation-T/information-negotiation/propose/v1'
PROPOSE_TEXT = {
    1: '## Information negotiation\nPlease provide the site list to be covered.',
    2: '## Information negotiation\nPlease confirm the maintenance window (round 2).',
}


# --------------------------------------------------------------------------------------------
# helpers


def first_text(message: Message | None) -> str:
    """``message.parts[0].text`` ('' when absent or not a text part)."""
    if message is None or not message.parts:
        return ''
    part = message.parts[0]
    return part.text if part.HasField('text') else ''


def text_part(text: str) -> Part:
    return Part(text=text)


async def start_task(context: RequestContext, queue: EventQueue) -> TaskUpdater:
    """Enqueues the initial SUBMITTED snapshot for a new task; returns an updater.

    For an existing task the task's own context id is used: a follow-up without ``contextId``
    gets a freshly generated one in ``context.context_id``.
    """
    current = context.current_task
    if current is not None:
        return TaskUpdater(queue, current.id, current.context_id or context.context_id)
    task = Task(
        id=context.task_id,
        context_id=context.context_id,
        status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
    )
    if context.message is not None:
        task.history.append(context.message)
    await queue.enqueue_event(task)
    return TaskUpdater(queue, context.task_id, context.context_id)


def agent_text(updater: TaskUpdater, text: str) -> Message:
    return updater.new_agent_message([text_part(text)])


# --------------------------------------------------------------------------------------------
# executors


class EchoExecutor(AgentExecutor):
    """Completes every task with artifact ``result`` = ``echo: <text>``."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await start_task(context, event_queue)
        await updater.add_artifact(
            [text_part('echo: ' + first_text(context.message))], name='result'
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def received_traceparent(context: RequestContext) -> str:
    """The W3C ``traceparent`` the request came with: an HTTP header on the JSON bindings,
    request metadata on gRPC; ``'none'`` without one."""
    call = context.call_context
    state = call.state if call is not None else {}
    headers = state.get('headers') or {}
    for name, value in headers.items():
        if name.lower() == 'traceparent':
            return value
    grpc_context = state.get('grpc_context')
    if grpc_context is not None:
        for name, value in grpc_context.invocation_metadata() or ():
            if name.lower() == 'traceparent':
                return value if isinstance(value, str) else value.decode()
    return 'none'


class TracerExecutor(AgentExecutor):
    """Completes every task with artifact ``result`` = the ``traceparent`` it received."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await start_task(context, event_queue)
        await updater.add_artifact(
            [text_part(received_traceparent(context))], name='result'
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class ReplierExecutor(AgentExecutor):
    """Answers with its final status message only: ``complete(message)``, no artifact."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await start_task(context, event_queue)
        await updater.start_work()
        await updater.complete(agent_text(updater, 'reply: ' + first_text(context.message)))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class StreamerExecutor(AgentExecutor):
    """SUBMITTED, WORKING, chunk 1, chunk 2 (append, lastChunk), COMPLETED."""

    def __init__(self, pause: float = 0.05) -> None:
        self.pause = pause

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await start_task(context, event_queue)
        text = first_text(context.message)
        artifact_id = str(uuid.uuid4())
        await asyncio.sleep(self.pause)
        await updater.start_work()
        await asyncio.sleep(self.pause)
        await updater.add_artifact(
            [text_part('chunk1 ')], artifact_id=artifact_id, name='result', append=False
        )
        await asyncio.sleep(self.pause)
        await updater.add_artifact(
            [text_part('chunk2: ' + text)],
            artifact_id=artifact_id,
            name='result',
            append=True,
            last_chunk=True,
        )
        await asyncio.sleep(self.pause)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def _integral(v: Any) -> int | None:
    """A JSON number with an integral value (Struct numbers arrive as floats)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not v.is_integer():
        return None
    return int(v)


def _struct(msg: Message | None) -> dict[str, Any]:
    if msg is None or not msg.HasField('metadata'):
        return {}
    return MessageToDict(msg.metadata)


class NegotiatorExecutor(AgentExecutor):
    """Negotiation-T information negotiation; agreement after two accepted Proposes.

    The pending Propose is read back from the stored task's status message, so the agent keeps
    no state of its own.
    """

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        current = context.current_task
        updater = await start_task(context, event_queue)
        if current is None:
            await self._propose(updater, str(uuid.uuid4()), 1)
            return

        pending = _struct(current.status.message if current.status.HasField('message') else None)
        pctx = pending.get('negotiationContext')
        if not isinstance(pctx, dict):
            await updater.failed(agent_text(updater, 'negotiation: no pending Propose on this task'))
            return
        p_id, p_round = pctx.get('id'), _integral(pctx.get('round'))

        meta = _struct(context.message)
        ctx = meta.get('negotiationContext')
        if not isinstance(ctx, dict):
            await updater.failed(
                agent_text(updater, 'negotiation: follow-up carries no negotiationContext')
            )
            return
        c_id, c_round = ctx.get('id'), _integral(ctx.get('round'))
        c_max = ctx.get('maxRounds')
        perf = ctx.get('performative')
        if c_id != p_id:
            await updater.failed(
                agent_text(
                    updater,
                    f'negotiation: context id {c_id!r} does not match the pending Propose {p_id!r}',
                )
            )
            return
        if c_round is None or c_round != p_round:
            await updater.failed(
                agent_text(
                    updater,
                    f'negotiation: round {ctx.get("round")!r} does not match the pending '
                    f'Propose round {p_round}',
                )
            )
            return
        if c_max is not None and _integral(c_max) != NEG_MAX_ROUNDS:
            await updater.failed(
                agent_text(
                    updater,
                    f'negotiation: maxRounds {c_max!r} does not match the pending Propose '
                    f'maxRounds {NEG_MAX_ROUNDS}',
                )
            )
            return
        if perf == 'ACCEPT':
            if c_round >= NEG_ROUNDS_TO_AGREE:
                await updater.add_artifact(
                    [text_part(f'agreed after {c_round} rounds')], name='result'
                )
                await updater.complete()
            else:
                await self._propose(updater, p_id, c_round + 1)
        elif perf == 'REJECT':
            await updater.failed(
                agent_text(updater, f'negotiation rejected by the client in round {c_round}')
            )
        elif perf == 'ABORT':
            await updater.cancel(
                agent_text(updater, f'negotiation aborted by the client in round {c_round}')
            )
        else:
            await updater.failed(
                agent_text(
                    updater,
                    f'negotiation: performative {perf!r} is not a valid reply '
                    '(expected ACCEPT, REJECT or ABORT)',
                )
            )

    async def _propose(self, updater: TaskUpdater, neg_id: str, rnd: int) -> None:
        text = PROPOSE_TEXT.get(rnd, PROPOSE_TEXT[1])
        msg = updater.new_agent_message(
            [text_part(text)],
            metadata={
                NEGT: text,
                'templateUri': PROPOSE_TEMPLATE,
                'negotiationContext': {
                    'id': neg_id,
                    'round': rnd,
                    'maxRounds': NEG_MAX_ROUNDS,
                    'performative': 'PROPOSE',
                },
            },
        )
        msg.extensions.append(NEGT)
        await updater.requires_input(msg)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class AskerExecutor(AgentExecutor):
    """Asks a plain question (INPUT_REQUIRED, no Negotiation-T); a follow-up on the same task
    completes it with artifact ``result`` = ``answer: <follow-up text>``."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        current = context.current_task
        updater = await start_task(context, event_queue)
        if current is None:
            await updater.requires_input(agent_text(updater, 'Which site?'))
            return
        await updater.add_artifact(
            [text_part('answer: ' + first_text(context.message))], name='result'
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class FailerExecutor(AgentExecutor):
    """Every task ends FAILED with status message ``simulated business failure``."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await start_task(context, event_queue)
        await updater.failed(agent_text(updater, 'simulated business failure'))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class SlowExecutor(AgentExecutor):
    """WORKING for ``seconds`` (one status update per second) unless cancelled, then COMPLETED."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await start_task(context, event_queue)
        for i in range(self.seconds):
            await updater.start_work(agent_text(updater, f'working {i}/{self.seconds}'))
            await asyncio.sleep(1.0)
        await updater.add_artifact(
            [text_part(f'slow: done after {self.seconds} s')], name='result'
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel(
            # new_agent_message is an instance helper; build the message by hand.
            Message(
                role=Role.ROLE_AGENT,
                message_id=str(uuid.uuid4()),
                task_id=context.task_id,
                context_id=context.context_id,
                parts=[text_part('canceled on request')],
            )
        )


# --------------------------------------------------------------------------------------------
# cards and apps


def make_card(
    name: str, port: int, grpc_port: int, streaming: bool, description: str
) -> AgentCard:
    base = f'http://127.0.0.1:{port}'
    return AgentCard(
        name=name,
        description=description,
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(
                url=base + JSONRPC_PATH, protocol_binding='JSONRPC', protocol_version='1.0'
            ),
            AgentInterface(
                url=base + REST_PATH, protocol_binding='HTTP+JSON', protocol_version='1.0'
            ),
            AgentInterface(
                url=f'127.0.0.1:{grpc_port}', protocol_binding='GRPC', protocol_version='1.0'
            ),
        ],
        capabilities=AgentCapabilities(
            streaming=streaming,
            push_notifications=False,
            extensions=[
                AgentExtension(uri=TASKT, description='Task-T'),
                AgentExtension(
                    uri=NEGT, description='Negotiation-T', params={'maxRounds': NEG_MAX_ROUNDS}
                ),
            ],
        ),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[
            AgentSkill(
                id=name, name=name, description=description, tags=['a2at-interop']
            )
        ],
    )


def build_agents(slow_seconds: int) -> list[tuple[str, bool, str, AgentExecutor]]:
    return [
        ('echo', False, 'Completes every task with "echo: <text>"', EchoExecutor()),
        ('streamer', True, 'Streams a two-chunk artifact', StreamerExecutor()),
        (
            'negotiator',
            False,
            'Negotiation-T peer: agrees after two accepted Proposes',
            NegotiatorExecutor(),
        ),
        ('failer', False, 'Fails every task', FailerExecutor()),
        ('asker', False, 'Asks for input without Negotiation-T', AskerExecutor()),
        ('replier', True, 'Answers with its final status message only', ReplierExecutor()),
        ('paced', True, 'Streams a two-chunk artifact slowly', StreamerExecutor(pause=0.3)),
        ('slow', True, f'Works for {slow_seconds} s unless cancelled', SlowExecutor(slow_seconds)),
        ('tracer', False, 'Answers with the traceparent it received', TracerExecutor()),
    ]


def build_handler(card: AgentCard, executor: AgentExecutor) -> DefaultRequestHandler:
    return DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )


def build_app(card: AgentCard, handler: DefaultRequestHandler) -> Starlette:
    routes: list[Any] = []
    routes += create_agent_card_routes(card)
    routes += create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH)
    # REST routes last: they include a catch-all `/{tenant}` mount.
    routes += create_rest_routes(handler, path_prefix=REST_PATH)
    return Starlette(routes=routes)


class QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to this script (several share a loop)."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[override]
        yield


def bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Daemon thread: sets ``stop`` when stdin reaches EOF (or fails)."""

    def run() -> None:
        try:
            while sys.stdin.buffer.read1(65536):
                pass
        except (OSError, ValueError):
            pass
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=run, name='stdin-eof', daemon=True).start()


async def main_async(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    servers: list[tuple[QuietServer, socket.socket]] = []
    grpc_servers: list[grpc.aio.Server] = []
    cards: dict[str, Any] = {}
    agents = build_agents(args.slow_seconds)
    for i, (name, streaming, description, executor) in enumerate(agents):
        sock = bind(args.base_port + i if args.base_port else 0)
        port = sock.getsockname()[1]
        grpc_server = grpc.aio.server()
        grpc_port = grpc_server.add_insecure_port(
            f'127.0.0.1:{args.base_port + len(agents) + i if args.base_port else 0}'
        )
        card = make_card(name, port, grpc_port, streaming, description)
        cards[name] = agent_card_to_dict(card)
        handler = build_handler(card, executor)
        add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
        await grpc_server.start()
        grpc_servers.append(grpc_server)
        config = uvicorn.Config(
            build_app(card, handler),
            lifespan='off',
            log_level=args.log_level,
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        servers.append((QuietServer(config), sock))

    tasks = [
        asyncio.create_task(server.serve(sockets=[sock]), name=f'serve:{sock.getsockname()}')
        for server, sock in servers
    ]
    while not all(server.started for server, _ in servers):
        if any(t.done() for t in tasks):
            for t in tasks:
                if t.done() and t.exception():
                    raise t.exception()  # type: ignore[misc]
            LOG.error('a server stopped during startup')
            return 1
        await asyncio.sleep(0.02)

    sys.stdout.write('READY ' + json.dumps(cards, separators=(',', ':')) + '\n')
    sys.stdout.flush()

    if not args.no_stdin:
        watch_stdin(loop, stop)
    await stop.wait()
    LOG.info('shutting down')
    for server, _ in servers:
        server.should_exit = True
        server.force_exit = True
    for grpc_server in grpc_servers:
        await grpc_server.stop(grace=None)
    # Open SSE streams and blocking sends are dropped; os._exit in main() ends the rest.
    await asyncio.wait(tasks, timeout=0.5)
    exit_now(0)
    return 0


def exit_now(code: int) -> None:
    """Exits without asyncio.run's cleanup (cancelling leftover SDK tasks can take seconds)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument(
        '--base-port',
        type=int,
        default=0,
        help='agents listen on N, N+1, ... in the order ' + ', '.join(AGENT_NAMES)
        + ' (default: OS-chosen ports)',
    )
    ap.add_argument(
        '--no-stdin',
        action='store_true',
        help='do not exit on stdin EOF (stop with SIGTERM/SIGINT only)',
    )
    ap.add_argument(
        '--slow-seconds', type=int, default=60, help='how long `slow` works (default 60)'
    )
    ap.add_argument('--log-level', default='warning', help='uvicorn/a2a log level (stderr)')
    args = ap.parse_args()
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format='%(asctime)s %(levelname)s %(name)s: %(message)s',
    )
    exit_now(asyncio.run(main_async(args)))


if __name__ == '__main__':
    main()
