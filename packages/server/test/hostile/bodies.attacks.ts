/**
 * Attacks on request bodies (issue #15, points 1 and 3), for the hostile suite and the
 * benchmark: many clients uploading large bodies the server must not buffer (a wrong
 * key: refused from the headers; a valid producer with a bad signature: held by the
 * body budget), and a batch holding one event nested 5,000 deep.
 *
 * Each uploader is a raw socket from the attacker's address that writes its headers,
 * then its body at a bounded speed while it reads; it stops at the first answer or
 * when the server closes, and reports what it got.
 */
import { createHmac } from "node:crypto";
import type { Socket } from "node:net";
import { ATTACKER, rawSocket, send } from "./harness.js";

export interface UploadOptions {
  port: number;
  /** concurrent uploaders */
  clients: number;
  /** body bytes each declares (or, chunked, means to send) */
  bytes: number;
  path: string;
  /** credential headers of uploader `i` (called once per attempt) */
  headers: (i: number) => Record<string, string>;
  /** how uploader `i` frames its body */
  framing: (i: number) => "content-length" | "chunked";
  /** upload speed of one uploader @defaultValue 4 MiB/s */
  bytesPerSecond?: number;
  /** the attack ends after this long, uploads in flight are abandoned */
  durationMs: number;
  /**
   * upload again after an answer until the attack ends: `"retry-after"` after one that
   * says when (waiting as told), `"always"` after any @defaultValue never
   */
  again?: "retry-after" | "always";
  /** with `again: "always"`, the pause between one answer and the next upload @defaultValue 0 */
  pauseMs?: number;
  localAddress?: string;
}

export interface UploadAnswer {
  /** HTTP status of the answer; 0 when the connection closed without one */
  status: number;
  retryAfter: string | null;
  /** the answer's body (its start) */
  body: string;
  /** body bytes written before the answer or the close */
  sent: number;
  /** whether the server closed the connection after answering */
  closedByServer: boolean;
}

const PIECE = 64 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function answerOf(raw: string): { status: number; retryAfter: string | null; body: string } | null {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const head = raw.slice(0, end);
  const declared = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? Number.NaN);
  const body = raw.slice(end + 4);
  if (!Number.isNaN(declared) && Buffer.byteLength(body) < declared) return null; // not all of it yet
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
    retryAfter: /\r\nretry-after: ([^\r]+)/i.exec(head)?.[1] ?? null,
    body: body.slice(0, 300),
  };
}

/** One upload: headers, then the body at the given speed until an answer or a close. */
async function uploadOnce(opts: UploadOptions, i: number, deadline: number): Promise<UploadAnswer> {
  let socket: Socket;
  try {
    socket = await rawSocket(opts.port, opts.localAddress ?? ATTACKER);
  } catch {
    return { status: 0, retryAfter: null, body: "connect failed", sent: 0, closedByServer: false };
  }
  let raw = "";
  let closed = false;
  socket.on("data", (d: Buffer) => {
    raw += d.toString("latin1");
  });
  socket.on("error", () => {}); // writing after the server's close may fail: the answer is what counts
  const gone = new Promise<void>((r) =>
    socket.once("close", () => {
      closed = true;
      r();
    }),
  );
  const chunked = opts.framing(i) === "chunked";
  const headers = {
    Host: "127.0.0.1",
    "Content-Type": "application/json",
    ...opts.headers(i),
    ...(chunked ? { "Transfer-Encoding": "chunked" } : { "Content-Length": String(opts.bytes) }),
  };
  socket.write(
    `POST ${opts.path} HTTP/1.1\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("")}\r\n`,
  );
  const piece = Buffer.alloc(PIECE, 0x20); // whitespace: valid JSON padding, whatever is cut
  const pace = (PIECE / (opts.bytesPerSecond ?? 4 * 1024 * 1024)) * 1000;
  let sent = 0;
  const started = performance.now();
  while (sent < opts.bytes && !closed && !answerOf(raw) && Date.now() < deadline) {
    // at most one piece ahead of the paced schedule, and not past a full socket
    const due = started + (sent / PIECE) * pace;
    const wait = due - performance.now();
    if (wait > 0 || socket.writableLength > 4 * PIECE) {
      await sleep(Math.max(1, Math.min(wait, 50)));
      continue;
    }
    const n = Math.min(PIECE, opts.bytes - sent);
    const bytes = n === PIECE ? piece : piece.subarray(0, n);
    socket.write(chunked ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), bytes, Buffer.from("\r\n")]) : bytes);
    sent += n;
  }
  if (chunked && sent >= opts.bytes && !closed) socket.write("0\r\n\r\n");
  // the answer, then whether the server closes
  const until = Math.max(Date.now() + 2000, Math.min(deadline + 5000, Date.now() + 15_000));
  while (!answerOf(raw) && !closed && Date.now() < until) await sleep(10);
  const answer = answerOf(raw);
  if (answer) await Promise.race([gone, sleep(1000)]);
  const closedByServer = closed;
  socket.destroy();
  return { ...(answer ?? { status: 0, retryAfter: null, body: raw.slice(0, 300) }), sent, closedByServer };
}

/**
 * `clients` uploaders at once, each uploading until `durationMs` has passed (one upload
 * each, or another after each answer: see `again`). Every answer.
 */
export async function uploadFlood(opts: UploadOptions): Promise<UploadAnswer[]> {
  const deadline = Date.now() + opts.durationMs;
  const answers: UploadAnswer[] = [];
  await Promise.all(
    Array.from({ length: opts.clients }, async (_, i) => {
      for (;;) {
        const answer = await uploadOnce(opts, i, deadline);
        answers.push(answer);
        if (Date.now() >= deadline || opts.again === undefined) return;
        if (opts.again === "retry-after") {
          if (answer.retryAfter === null) return;
          await sleep(Math.min(Number(answer.retryAfter) * 1000, deadline - Date.now()));
        } else if (opts.pauseMs) {
          await sleep(Math.min(opts.pauseMs, deadline - Date.now()));
        }
        if (Date.now() >= deadline) return;
      }
    }),
  );
  return answers;
}

/** A bad signature for `body`-less uploads: a fresh `t`, an HMAC of other bytes. */
export function badSignature(): string {
  const t = Math.floor(Date.now() / 1000);
  return `t=${t},v1=${createHmac("sha256", "not the secret").update(`${t}.`).digest("hex")}`;
}

export interface DeepBatchOptions {
  base: string;
  producer: string;
  producerKey: string;
  eventType: string;
  /** levels of nesting of the deep event @defaultValue 5000 */
  depth?: number;
  /** batches sent, one after another @defaultValue 1 */
  rounds?: number;
  localAddress?: string;
}

export interface DeepBatchAnswer {
  status: number;
  /** `accepted`, `rejected:<code>`… per event, in order */
  results: string[];
  /** the id of the valid event beside the deep one */
  validId: string;
}

/** Batches of `[one event nested `depth` deep, one valid event]`. */
export async function deepBatch(opts: DeepBatchOptions): Promise<DeepBatchAnswer[]> {
  const depth = opts.depth ?? 5000;
  const deep = `${"[".repeat(depth)}${"]".repeat(depth)}`;
  const out: DeepBatchAnswer[] = [];
  for (let round = 0; round < (opts.rounds ?? 1); round++) {
    const tag = `${process.pid}-${Date.now()}-${round}`;
    const validId = `valid-${tag}`;
    const body = `{"events":[{"id":"deep-${tag}","type":"${opts.eventType}","correlationId":"deep","payload":{"x":${deep}}},${JSON.stringify(
      { id: validId, type: opts.eventType, correlationId: `c-${tag}` },
    )}]}`;
    const answer = await send(opts.base, "POST", "/v1/events/batch", {
      headers: { authorization: `Bearer ${opts.producerKey}`, "rendezvous-producer": opts.producer },
      body,
      localAddress: opts.localAddress ?? ATTACKER,
    });
    let results: string[] = [];
    try {
      results = (
        JSON.parse(answer.body) as { results: Array<{ status: string; error?: { code: string } }> }
      ).results.map((r) => (r.error ? `${r.status}:${r.error.code}` : r.status));
    } catch {
      results = [answer.body.slice(0, 200)];
    }
    out.push({ status: answer.status, results, validId });
  }
  return out;
}
