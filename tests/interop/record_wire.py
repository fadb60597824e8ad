#!/usr/bin/env python3
"""Records real A2A v1.0 wire exchanges with the interop peers into tests/fixtures/wire/.

Starts ``agents.py`` (same interpreter), sends requests with raw HTTP (``http.client``, no SDK
client) on both bindings and stores each response as two files:

* ``<name>.http``: the response exactly as received: status line, header lines ``name: value``
  in received order and spelling, an empty line, then the body bytes. Lines of the head end
  with ``\\n``. The body is the message body after transfer decoding (chunked framing removed,
  although the ``Transfer-Encoding: chunked`` header is kept as received); the bytes are
  otherwise untouched (SSE ``\\r\\n`` line ends included).
* ``<name>.json``: how to decode it and what to expect (see tests/interop/README.md):
  ``binding`` (``JSONRPC``/``HTTP+JSON``), ``kind`` (``SendMessage``, ``SendStreamingMessage``,
  ``GetTask``, ``CancelTask``), ``rpcId`` (JSON-RPC id as a string, ``""`` for REST),
  ``chunks`` (body sizes as read from the socket), ``request`` (what was sent), ``expect``.

Every response is checked against its expectation before anything is written; on a mismatch
nothing is written and the exit status is 1. Old ``*.http``/``*.json`` files in the output
directory are replaced.

Usage: ``record_wire.py [--out DIR]`` (run with the venv python from setup.sh).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import time
import uuid

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXT = 'https://projects.tmforum.org/a2aproject/telecommunication/extensions/'
TASKT = EXT + 'Task-T/v1'
NEGT = EXT + 'Negotiation-T/v1'


# --------------------------------------------------------------------------------------------
# raw HTTP


class Exchange:
    def __init__(self, name: str, binding: str, kind: str, rpc_id: str, agent: str) -> None:
        self.name, self.binding, self.kind, self.rpc_id, self.agent = (
            name,
            binding,
            kind,
            rpc_id,
            agent,
        )
        self.request: dict[str, Any] = {}
        self.head = b''
        self.body = b''
        self.chunks: list[int] = []
        self.expect: dict[str, Any] = {}


def http_call(
    base: str,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | None,
    ex: Exchange,
    on_chunk=None,
) -> None:
    """Sends one request; stores the raw response head and body (read chunk by chunk)."""
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    version = {10: 'HTTP/1.0', 11: 'HTTP/1.1'}.get(resp.version, 'HTTP/1.1')
    head = f'{version} {resp.status} {resp.reason}\n'
    for k, v in resp.getheaders():
        head += f'{k}: {v}\n'
    ex.head = head.encode('latin-1')
    ex.request = {
        'method': method,
        'path': path,
        'headers': [[k, v] for k, v in headers.items()],
        'body': body.decode('utf-8') if body else '',
    }
    buf = bytearray()
    while True:
        chunk = resp.read1(65536)
        if not chunk:
            break
        buf += chunk
        ex.chunks.append(len(chunk))
        if on_chunk is not None:
            on_chunk(bytes(buf))
    ex.body = bytes(buf)
    conn.close()


def hdrs(version: bool = True, stream: bool = False, body: bool = True) -> dict[str, str]:
    h: dict[str, str] = {}
    if body:
        h['Content-Type'] = 'application/json'
    if version:
        h['A2A-Version'] = '1.0'
    h['Accept'] = 'text/event-stream' if stream else 'application/json'
    return h


def user_message(text: str, task_id: str | None = None, context_id: str | None = None,
                 negotiation: dict[str, Any] | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {
        'messageId': str(uuid.uuid4()),
        'role': 'ROLE_USER',
        'parts': [{'text': text}],
    }
    if task_id:
        m['taskId'] = task_id
    if context_id:
        m['contextId'] = context_id
    if negotiation is None:
        m['extensions'] = [TASKT, NEGT]
        m['metadata'] = {TASKT: '## Task\n' + text, 'templateUri': 'Task-T/network-layer/ran-energy-saving/v1'}
    else:
        m['extensions'] = [NEGT]
        m['metadata'] = {
            NEGT: '## 协商结论\nAccept',
            'templateUri': 'Negotiation-T/information-negotiation/accept-reject/v1',
            'negotiationContext': negotiation,
        }
    return m


class Recorder:
    def __init__(self, cards: dict[str, Any]) -> None:
        self.cards = cards
        self.done: list[Exchange] = []
        self.rpc_seq = 0

    def urls(self, agent: str) -> tuple[str, str, str]:
        """(origin, json-rpc path, rest base path) of an agent, from its card."""
        ifs = {i['protocolBinding']: i['url'] for i in self.cards[agent]['supportedInterfaces']}
        rpc, rest = urlsplit(ifs['JSONRPC']), urlsplit(ifs['HTTP+JSON'])
        return f'{rpc.scheme}://{rpc.netloc}', rpc.path, rest.path.rstrip('/')

    def call(self, name: str, binding: str, agent: str, kind: str, params: dict[str, Any],
             expect: dict[str, Any], *, version: bool = True, numeric_id: bool = False,
             on_chunk=None) -> Exchange:
        origin, rpc_path, rest_base = self.urls(agent)
        stream = kind in ('SendStreamingMessage', 'SubscribeToTask')
        self.rpc_seq += 1
        if binding == 'JSONRPC':
            rpc_id: Any = self.rpc_seq if numeric_id else f'{name}-{self.rpc_seq}'
            env = {'jsonrpc': '2.0', 'id': rpc_id, 'method': kind, 'params': params}
            ex = Exchange(name, binding, kind, str(rpc_id), agent)
            http_call(origin, 'POST', rpc_path, hdrs(version, stream), json.dumps(env).encode(),
                      ex, on_chunk)
        else:
            ex = Exchange(name, binding, kind, '', agent)
            if kind == 'SendMessage':
                m, p, b = 'POST', '/message:send', params
            elif kind == 'SendStreamingMessage':
                m, p, b = 'POST', '/message:stream', params
            elif kind == 'GetTask':
                m, p, b = 'GET', f'/tasks/{params["id"]}?historyLength=0', None
            elif kind == 'CancelTask':
                m, p, b = 'POST', f'/tasks/{params["id"]}:cancel', {}
            else:
                raise ValueError(kind)
            http_call(origin, m, rest_base + p, hdrs(version, stream, b is not None),
                      json.dumps(b).encode() if b is not None else None, ex, on_chunk)
        ex.expect = expect
        problems = check(ex)
        if problems:
            raise SystemExit(f'{name}: unexpected response: {problems}\n'
                             f'{ex.head.decode("latin-1")}\n{ex.body[:2000]!r}')
        self.done.append(ex)
        return ex


# --------------------------------------------------------------------------------------------
# a small independent decoder, to validate recordings before writing them


def sse_payloads(body: bytes) -> list[tuple[str | None, str]]:
    events, data, name = [], [], None
    for raw in body.decode('utf-8').replace('\r\n', '\n').replace('\r', '\n').split('\n'):
        if raw == '':
            if data:
                events.append((name, '\n'.join(data)))
            data, name = [], None
        elif raw.startswith(':'):
            continue
        else:
            field, _, value = raw.partition(':')
            value = value[1:] if value.startswith(' ') else value
            if field == 'data':
                data.append(value)
            elif field == 'event':
                name = value
    if data:
        events.append((name, '\n'.join(data)))
    return events


def summary(item: dict[str, Any]) -> str:
    if 'task' in item:
        return 'task:' + item['task']['status']['state']
    if 'statusUpdate' in item:
        return 'status:' + item['statusUpdate']['status']['state']
    if 'artifactUpdate' in item:
        a = item['artifactUpdate']
        return 'artifact' + ('+append' if a.get('append') else '') + (
            '+last' if a.get('lastChunk') else '')
    if 'message' in item:
        return 'message'
    return '?'


def decode(ex: Exchange) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(stream items, error object) of a recorded response."""
    status = int(ex.head.split(b' ', 2)[1])
    ctype = ''
    for line in ex.head.decode('latin-1').split('\n')[1:]:
        k, _, v = line.partition(':')
        if k.strip().lower() == 'content-type':
            ctype = v.strip().split(';')[0].lower()
    if ctype == 'text/event-stream' and 200 <= status < 300:
        docs = [json.loads(d) for _, d in sse_payloads(ex.body)]
    else:
        docs = [json.loads(ex.body)]
    items: list[dict[str, Any]] = []
    for d in docs:
        if 'error' in d:
            return items, d['error']
        r = d['result'] if ex.binding == 'JSONRPC' else d
        if ex.binding == 'JSONRPC' and str(d.get('id')) != ex.rpc_id:
            return items, {'id mismatch': d.get('id')}
        if ex.kind in ('GetTask', 'CancelTask'):
            r = {'task': r}
        items.append(r)
    return items, None


def error_code(err: dict[str, Any]) -> str:
    for det in err.get('data') or err.get('details') or []:
        if isinstance(det, dict) and str(det.get('@type', '')).endswith('google.rpc.ErrorInfo'):
            return 'a2a.' + det['reason'].lower()
    return f'a2a.?{err.get("code")}'


def fold(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Final state, artifact outputs (assembled) and latest status message of the items."""
    state, status_msg, arts = None, None, {}
    for it in items:
        if 'task' in it:
            t = it['task']
            state, status_msg = t['status']['state'], t['status'].get('message')
            arts = {a['artifactId']: list(a['parts']) for a in t.get('artifacts', [])}
        elif 'statusUpdate' in it:
            s = it['statusUpdate']['status']
            state, status_msg = s['state'], s.get('message')
        elif 'artifactUpdate' in it:
            a = it['artifactUpdate']
            if a.get('append') and a['artifact']['artifactId'] in arts:
                arts[a['artifact']['artifactId']] += a['artifact']['parts']
            else:
                arts[a['artifact']['artifactId']] = list(a['artifact']['parts'])
    outputs = [p['text'] for parts in arts.values() for p in parts if 'text' in p]
    return {'state': state, 'status': status_msg, 'outputs': outputs}


def check(ex: Exchange) -> list[str]:
    exp = ex.expect
    items, err = decode(ex)
    if 'rejected' in exp:
        if err is None:
            return [f'expected rejection {exp["rejected"]}, got {len(items)} items']
        code = error_code(err)
        return [] if code == exp['rejected'] else [f'rejected with {code}']
    if err is not None:
        return [f'error {err}']
    p = []
    got = [summary(i) for i in items]
    if got != exp['events']:
        p.append(f'events {got}')
    f = fold(items)
    if f['state'] != exp['finalState']:
        p.append(f'final state {f["state"]}')
    if 'outputs' in exp and f['outputs'] != exp['outputs']:
        p.append(f'outputs {f["outputs"]}')
    if 'statusText' in exp:
        txt = (f['status'] or {}).get('parts', [{}])[0].get('text')
        if txt != exp['statusText']:
            p.append(f'status text {txt!r}')
    if 'proposeRound' in exp:
        ctx = ((f['status'] or {}).get('metadata') or {}).get('negotiationContext') or {}
        if ctx.get('round') != exp['proposeRound'] or ctx.get('performative') != 'PROPOSE':
            p.append(f'negotiationContext {ctx}')
    return p


def last_task(ex: Exchange) -> dict[str, Any]:
    items, _ = decode(ex)
    return items[-1]['task']


# --------------------------------------------------------------------------------------------
# the exchanges


def record_binding(r: Recorder, b: str) -> None:
    prefix = 'jsonrpc' if b == 'JSONRPC' else 'rest'
    cfg = {'historyLength': 0}

    def send(msg: dict[str, Any], **conf: Any) -> dict[str, Any]:
        return {'message': msg, 'configuration': {**cfg, **conf}}

    # echo: unary send, GetTask, cancel of a completed task
    ex = r.call(f'{prefix}_echo_send', b, 'echo', 'SendMessage', send(user_message('hello interop')),
                {'events': ['task:TASK_STATE_COMPLETED'], 'finalState': 'TASK_STATE_COMPLETED',
                 'outputs': ['echo: hello interop']})
    echo_task = last_task(ex)['id']
    r.call(f'{prefix}_echo_get_task', b, 'echo', 'GetTask', {'id': echo_task, 'historyLength': 0},
           {'events': ['task:TASK_STATE_COMPLETED'], 'finalState': 'TASK_STATE_COMPLETED',
            'outputs': ['echo: hello interop']}, numeric_id=True)

    # streamer: streaming and unary
    chunks = ['chunk1 ', 'chunk2: hello stream']
    r.call(f'{prefix}_streamer_stream', b, 'streamer', 'SendStreamingMessage',
           send(user_message('hello stream')),
           {'events': ['task:TASK_STATE_SUBMITTED', 'status:TASK_STATE_WORKING', 'artifact',
                       'artifact+append+last', 'status:TASK_STATE_COMPLETED'],
            'finalState': 'TASK_STATE_COMPLETED', 'outputs': chunks})
    r.call(f'{prefix}_streamer_send', b, 'streamer', 'SendMessage',
           send(user_message('hello stream')),
           {'events': ['task:TASK_STATE_COMPLETED'], 'finalState': 'TASK_STATE_COMPLETED',
            'outputs': chunks})

    # negotiator: Propose, ACCEPT round 1 -> Propose round 2, ACCEPT round 2 -> COMPLETED
    ex = r.call(f'{prefix}_negotiator_send', b, 'negotiator', 'SendMessage',
                send(user_message('energy saving for site A')),
                {'events': ['task:TASK_STATE_INPUT_REQUIRED'],
                 'finalState': 'TASK_STATE_INPUT_REQUIRED', 'proposeRound': 1})
    t = last_task(ex)
    neg = dict(t['status']['message']['metadata']['negotiationContext'])
    for rnd in (1, 2):
        neg.update(round=rnd, maxRounds=3, performative='ACCEPT')
        exp: dict[str, Any] = (
            {'events': ['task:TASK_STATE_INPUT_REQUIRED'], 'finalState': 'TASK_STATE_INPUT_REQUIRED',
             'proposeRound': 2}
            if rnd == 1
            else {'events': ['task:TASK_STATE_COMPLETED'], 'finalState': 'TASK_STATE_COMPLETED',
                  'outputs': ['agreed after 2 rounds']})
        r.call(f'{prefix}_negotiator_accept_round{rnd}', b, 'negotiator', 'SendMessage',
               send(user_message('Accept', t['id'], t['contextId'], dict(neg))), exp)

    # failer
    r.call(f'{prefix}_failer_send', b, 'failer', 'SendMessage', send(user_message('do it')),
           {'events': ['task:TASK_STATE_FAILED'], 'finalState': 'TASK_STATE_FAILED',
            'statusText': 'simulated business failure'})

    # slow: returnImmediately, CancelTask; a stream cancelled after the first WORKING update
    ex = r.call(f'{prefix}_slow_send_return_immediately', b, 'slow', 'SendMessage',
                send(user_message('take your time'), returnImmediately=True),
                {'events': ['task:TASK_STATE_SUBMITTED'], 'finalState': 'TASK_STATE_SUBMITTED'})
    slow_task = last_task(ex)['id']
    time.sleep(0.3)
    r.call(f'{prefix}_slow_cancel', b, 'slow', 'CancelTask', {'id': slow_task},
           {'events': ['task:TASK_STATE_CANCELED'], 'finalState': 'TASK_STATE_CANCELED',
            'statusText': 'canceled on request'})

    cancelled: list[str] = []

    def cancel_after_working(body: bytes) -> None:
        if cancelled or b'TASK_STATE_WORKING' not in body:
            return
        first = sse_payloads(body)[0][1]
        doc = json.loads(first)
        tid = (doc['result'] if b == 'JSONRPC' else doc)['task']['id']
        cancelled.append(tid)
        side = Exchange('side-cancel', b, 'CancelTask', '', 'slow')
        origin, rpc_path, rest_base = r.urls('slow')
        if b == 'JSONRPC':
            env = {'jsonrpc': '2.0', 'id': 'side', 'method': 'CancelTask', 'params': {'id': tid}}
            http_call(origin, 'POST', rpc_path, hdrs(), json.dumps(env).encode(), side)
        else:
            http_call(origin, 'POST', f'{rest_base}/tasks/{tid}:cancel', hdrs(), b'{}', side)

    r.call(f'{prefix}_slow_stream_canceled', b, 'slow', 'SendStreamingMessage',
           send(user_message('stream slowly')),
           {'events': ['task:TASK_STATE_SUBMITTED', 'status:TASK_STATE_WORKING',
                       'status:TASK_STATE_CANCELED'],
            'finalState': 'TASK_STATE_CANCELED', 'statusText': 'canceled on request'},
           on_chunk=cancel_after_working)

    # errors
    r.call(f'{prefix}_error_get_task_unknown_id', b, 'echo', 'GetTask',
           {'id': 'no-such-task', 'historyLength': 0}, {'rejected': 'a2a.task_not_found'})
    r.call(f'{prefix}_error_missing_version_header', b, 'echo', 'SendMessage',
           send(user_message('no version')), {'rejected': 'a2a.version_not_supported'},
           version=False)
    r.call(f'{prefix}_error_cancel_completed_task', b, 'echo', 'CancelTask', {'id': echo_task},
           {'rejected': 'a2a.task_not_cancelable'})
    r.call(f'{prefix}_error_stream_not_supported', b, 'echo', 'SendStreamingMessage',
           send(user_message('stream please')), {'rejected': 'a2a.unsupported_operation'})


# --------------------------------------------------------------------------------------------


def start_agents() -> tuple[subprocess.Popen, dict[str, Any]]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / 'agents.py')],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith('READY '):
        proc.kill()
        raise SystemExit(f'agents.py did not print READY (got {line!r})')
    return proc, json.loads(line[len('READY '):])


def write(out: Path, done: list[Exchange]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for f in out.iterdir():
        if f.suffix in ('.http', '.json'):
            f.unlink()
    stamp = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    for ex in done:
        (out / f'{ex.name}.http').write_bytes(ex.head + b'\n' + ex.body)
        meta = {
            'binding': ex.binding,
            'kind': ex.kind,
            'rpcId': ex.rpc_id,
            'agent': ex.agent,
            'chunks': ex.chunks,
            'expect': ex.expect,
            'request': ex.request,
            'recorded': f'{stamp} by tests/interop/record_wire.py against a2a-sdk 1.3.0',
        }
        (out / f'{ex.name}.json').write_text(
            json.dumps(meta, indent=2, ensure_ascii=False) + '\n', encoding='utf-8')


def main() -> None:
    ap = argparse.ArgumentParser(description='Record A2A wire fixtures from the interop peers.')
    ap.add_argument('--out', default=str(ROOT / 'tests' / 'fixtures' / 'wire'))
    args = ap.parse_args()
    proc, cards = start_agents()
    try:
        r = Recorder(cards)
        for b in ('JSONRPC', 'HTTP+JSON'):
            record_binding(r, b)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    write(Path(args.out), r.done)
    print(f'recorded {len(r.done)} exchanges into {os.path.relpath(args.out, ROOT)}')


if __name__ == '__main__':
    main()
