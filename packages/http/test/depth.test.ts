/**
 * Client JSON nested deeper than MAX_JSON_DEPTH never reaches a recursive walk
 * (JSON.stringify, zod, ajv, canonicalJson, findInJson, the store's encoders): in a
 * batch only the deep event is refused, the valid one beside it is stored.
 */
import { describe, expect, it } from "vitest";
import { jsonBytesOver } from "../src/json-bounds.js";
import { MAX_JSON_DEPTH } from "../src/producers/validation.js";
import { errorCode, ev, makeApp, publish, send, snapshot, streamLength } from "./helpers.js";

const MAX = 65_536;
const arrays = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
const objects = (n: number, leaf = "1") => `${'{"a":'.repeat(n)}${leaf}${"}".repeat(n)}`;
const valid = JSON.stringify(ev("ok"));

/** A batch body of raw event texts. */
const batch = (...events: string[]) => `{"events":[${events.join(",")}]}`;

describe("deeply nested events", () => {
  const deepEvents: Array<[string, string]> = [
    [
      "a payload 5,000 arrays deep",
      `{"id":"deep","type":"job.done","correlationId":"c","payload":{"x":${arrays(5000)}}}`,
    ],
    ["a payload 5,000 objects deep", `{"id":"deep","type":"job.done","correlationId":"c","payload":${objects(5000)}}`],
    ["another field 5,000 deep", `{"id":"deep","type":"job.done","correlationId":${arrays(5000)}}`],
    ["an unknown key 5,000 deep", `{"id":"deep","type":"job.done","correlationId":"c","extra":${objects(5000)}}`],
    ["an event that is an array 5,000 deep", arrays(5000)],
    [
      "a forbidden key 5,000 deep",
      `{"id":"deep","type":"job.done","correlationId":"c","payload":${objects(5000, '{"__proto__":1}')}}`,
    ],
    ["an id 20,000 deep", `{"id":${arrays(20_000)},"type":"job.done","correlationId":"c"}`],
  ];

  for (const [what, deep] of deepEvents) {
    it(`a batch with ${what}: 200, that event rejected (invalid_event), the valid one stored`, async () => {
      const h = await makeApp({ maxPayloadBytes: MAX });
      const res = await send(h, "/v1/events/batch", batch(deep, valid));
      expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
      const { results } = res.json();
      expect(results.map((r: { status: string; error?: { code: string } }) => r.error?.code ?? r.status)).toEqual([
        "invalid_event",
        "accepted",
      ]);
      expect(JSON.stringify(results[0].error.issues)).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
      expect(await streamLength(h)).toBe(1);
    });
  }

  it("a deep event larger than maxPayloadBytes is payload_too_large (too large wins, as before)", async () => {
    const h = await makeApp({ maxPayloadBytes: 2048 });
    const deep = `{"id":"deep","type":"job.done","correlationId":"c","payload":{"x":${arrays(5000)}}}`;
    const res = await send(h, "/v1/events/batch", batch(deep, valid));
    expect(res.statusCode).toBe(200);
    expect(
      res.json().results.map((r: { status: string; error?: { code: string } }) => r.error?.code ?? r.status),
    ).toEqual(["payload_too_large", "accepted"]);
  });

  it("sent alone, an event deep in any field is 400 invalid_event naming the field; nothing stored", async () => {
    const h = await makeApp({ maxPayloadBytes: MAX });
    const before = await snapshot(h);
    for (const [raw, path] of [
      [`{"id":"d","type":"job.done","correlationId":${arrays(5000)}}`, ["correlationId"]],
      [`{"id":"d","type":"job.done","correlationId":"c","payload":${objects(5000)}}`, ["payload"]],
      [arrays(5000), []],
    ] as const) {
      const res = await publish(h, raw);
      expect(res.statusCode).toBe(400);
      expect(errorCode(res)).toBe("invalid_event");
      expect(res.json().error.issues[0]).toEqual({ path, message: `nested deeper than ${MAX_JSON_DEPTH} levels` });
    }
    expect(await snapshot(h)).toEqual(before);
  });

  it("a batch envelope with a deep key beside events is 400 invalid_event, not 500", async () => {
    const h = await makeApp({ maxPayloadBytes: MAX });
    const res = await send(h, "/v1/events/batch", `{"events":[${valid}],"x":${objects(50_000, '{"__proto__":1}')}}`);
    expect(res.statusCode, res.body.slice(0, 300)).toBe(400);
    expect(errorCode(res)).toBe("invalid_event");
  });

  it("the payload may still nest MAX_JSON_DEPTH levels; other fields nothing deeper than the envelope allows", async () => {
    const h = await makeApp({ maxPayloadBytes: MAX });
    const ok = `{"id":"shallow","type":"job.done","correlationId":"c","payload":${objects(MAX_JSON_DEPTH)}}`;
    expect((await publish(h, ok)).statusCode).toBe(202);
    const over = `{"id":"over","type":"job.done","correlationId":"c","payload":${objects(MAX_JSON_DEPTH + 1)}}`;
    expect((await publish(h, over)).statusCode).toBe(400);
  });
});

describe("jsonBytesOver", () => {
  const samples: unknown[] = [
    null,
    true,
    0,
    -1.5e-7,
    "",
    "é\u2028\ud83d\ude00\ud800",
    [],
    {},
    [1, "a", null, [true, {}]],
    { a: 1, "b\n": [undefined, 2], c: undefined, d: { e: "f" } },
  ];
  it("is Buffer.byteLength(JSON.stringify(value)) > max, without recursing", () => {
    for (const value of samples) {
      const bytes = Buffer.byteLength(JSON.stringify(value));
      expect(jsonBytesOver(value, bytes), JSON.stringify(value)).toBe(false);
      expect(jsonBytesOver(value, bytes - 1), JSON.stringify(value)).toBe(true);
    }
    const deep = JSON.parse(arrays(200_000));
    expect(jsonBytesOver(deep, 400_000)).toBe(false);
    expect(jsonBytesOver(deep, 399_999)).toBe(true);
  });
});
