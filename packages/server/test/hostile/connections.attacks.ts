/**
 * Connection floods (issue #15, point 2), each an exported function so the benchmark can
 * reuse it: sockets that send one `GET /healthz`, read the answer and then sit idle on the
 * kept-alive connection, and sockets that connect and send nothing. Both are persistent: while
 * they hold, they reopen what the server closed (a bounded number per tick), so the server
 * stays at its cap for the whole attack and every legitimate connection meets a full house.
 *
 * Also the raw-connection helpers the connection tests share (`openRaw`, `answers`, `exchange`).
 */
import type { Socket } from "node:net";
import { ATTACKER, rawSocket } from "./harness.js";

/** A raw connection that records what comes back and when it closes. */
export interface RawConn {
  socket: Socket;
  /** everything received so far */
  data(): string;
  /** whether the connection is closed (by either side) */
  closed(): boolean;
  /** resolves with `Date.now()` of the close */
  whenClosed: Promise<number>;
}

/** Opens a raw connection from `localAddress` and records it (see {@link RawConn}). */
export async function openRaw(port: number, localAddress = ATTACKER): Promise<RawConn> {
  const socket = await rawSocket(port, localAddress);
  let data = "";
  let closed = false;
  socket.on("error", () => {});
  socket.on("data", (d: Buffer) => {
    data += d.toString("latin1");
  });
  const whenClosed = new Promise<number>((resolve) =>
    socket.once("close", () => {
      closed = true;
      resolve(Date.now());
    }),
  );
  return { socket, data: () => data, closed: () => closed, whenClosed };
}

export interface RawAnswer {
  status: number;
  /** the header block, lower-cased */
  headers: string;
  body: string;
}

/** The complete HTTP answers in `raw` (Content-Length framed, as the server sends them). */
export function answers(raw: string): RawAnswer[] {
  const out: RawAnswer[] = [];
  let at = 0;
  for (;;) {
    const end = raw.indexOf("\r\n\r\n", at);
    if (end < 0) return out;
    const head = raw.slice(at, end).toLowerCase();
    const length = Number(/content-length: *(\d+)/.exec(head)?.[1] ?? 0);
    if (raw.length < end + 4 + length) return out;
    out.push({
      status: Number(/^http\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
      headers: head,
      body: raw.slice(end + 4, end + 4 + length),
    });
    at = end + 4 + length;
  }
}

/** Writes `text` and waits for one more complete answer (or the close); the answer, if any. */
export async function exchange(conn: RawConn, text: string, ms = 5000): Promise<RawAnswer | undefined> {
  const before = answers(conn.data()).length;
  conn.socket.write(text);
  const end = Date.now() + ms;
  while (Date.now() < end && !conn.closed() && answers(conn.data()).length <= before) {
    await new Promise((r) => setTimeout(r, 5));
  }
  return answers(conn.data())[before];
}

export const HEALTHZ = "GET /healthz HTTP/1.1\r\nHost: rendezvous\r\n\r\n";

export interface FloodOptions {
  /** connections the attacker tries to hold */
  count: number;
  /** how long it holds them once opened, ms */
  holdMs: number;
  /** @defaultValue ATTACKER (127.0.0.2) */
  localAddress?: string;
  /** connects in flight at once while opening @defaultValue 200 */
  parallel?: number;
  /** most connections reopened per tick while holding @defaultValue 100 */
  topUp?: number;
  /** how often it reopens what the server closed, ms @defaultValue 500 */
  tickMs?: number;
}

export interface FloodReport {
  /** connections opened (the kernel completed the handshake), reopened ones included */
  connected: number;
  /** of those, how many got their `GET /healthz` answered (the idle flood only) */
  answered: number;
  /** of those, how many the server closed while the attacker held them */
  closedByServer: number;
  /** the attacker's connections still open when it stopped */
  openAtEnd: number;
  ms: number;
}

/**
 * Opens `count` connections in chunks, runs `onOpen` on each (the flood's first move), then
 * holds them for `holdMs`, reopening closed ones every tick; finally closes all of its own.
 */
async function flood(
  port: number,
  opts: FloodOptions,
  onOpen: (conn: RawConn) => Promise<boolean>,
): Promise<FloodReport> {
  const started = Date.now();
  const parallel = opts.parallel ?? 200;
  const mine = new Set<RawConn>();
  const report: FloodReport = { connected: 0, answered: 0, closedByServer: 0, openAtEnd: 0, ms: 0 };
  let stopping = false;
  const one = async () => {
    const conn = await openRaw(port, opts.localAddress ?? ATTACKER).catch(() => undefined);
    if (!conn) return;
    report.connected++;
    mine.add(conn);
    void conn.whenClosed.then(() => {
      mine.delete(conn);
      if (!stopping) report.closedByServer++;
    });
    if (await onOpen(conn)) report.answered++;
  };
  const open = () => [...mine].filter((c) => !c.closed()).length;
  for (let i = 0; i < opts.count; i += parallel) {
    await Promise.all(Array.from({ length: Math.min(parallel, opts.count - i) }, one));
  }
  const holdUntil = Date.now() + opts.holdMs;
  while (Date.now() < holdUntil) {
    await new Promise((r) => setTimeout(r, opts.tickMs ?? 500));
    const missing = Math.min(opts.topUp ?? 100, opts.count - open());
    await Promise.all(Array.from({ length: Math.max(0, missing) }, one));
  }
  report.openAtEnd = open();
  stopping = true;
  // a reset, not a FIN: no TIME_WAIT left on the attacker's ports for the next case
  for (const c of mine) c.socket.resetAndDestroy();
  report.ms = Date.now() - started;
  return report;
}

/**
 * `count` connections that each send one `GET /healthz`, read the answer and then sit idle
 * on the kept-alive connection (issue #15: 4,200 of them held every slot for 30 s).
 */
export function idleKeepAliveFlood(port: number, opts: FloodOptions): Promise<FloodReport> {
  return flood(port, opts, async (conn) => (await exchange(conn, HEALTHZ))?.status === 200);
}

/** `count` connections that connect and send nothing (issue #15: 10,000 blocked others for ~10 s). */
export function silentFlood(port: number, opts: FloodOptions): Promise<FloodReport> {
  return flood(port, opts, async () => false);
}
