import { createHmac } from "node:crypto";
import { keyHash, SecretKey, viewOfRecords } from "@rendezvous/engine";
import { describe, expect, it } from "vitest";
import {
  authenticateHost,
  authenticateProducerHeaders,
  computeSignature,
  indexView,
  parseSignatureHeader,
} from "../src/index.js";
import { ev, makeApp, nowSec, publish, signature, snapshot, streamLength } from "./helpers.js";

const UNAUTHORIZED = { error: { code: "unauthorized", message: "unauthorized" } };

describe("producer authentication", () => {
  it("a bearer key or a signature over the raw body authenticates; the tenant is the credential's", async () => {
    const h = await makeApp();
    const byKey = await publish(h, ev("k1"));
    expect(byKey.statusCode).toBe(202);
    const bySig = await publish(h, ev("s1"), { secret: "whsec_new" });
    expect(bySig.statusCode).toBe(202);
    expect(bySig.json().event).toMatchObject({ tenant: "acme", producer: "billing" });
  });

  it("secret rotation: the old and the new secret both verify, an unknown one does not", async () => {
    const h = await makeApp();
    expect((await publish(h, ev("r1"), { secret: "whsec_old" })).statusCode).toBe(202);
    expect((await publish(h, ev("r2"), { secret: "whsec_new" })).statusCode).toBe(202);
    expect((await publish(h, ev("r3"), { secret: "whsec_retired" })).statusCode).toBe(401);
    // a signer in mid-rotation may send one v1 per secret
    const body = JSON.stringify(ev("r4"));
    const t = nowSec();
    const header = `t=${t},v1=${computeSignature("whsec_retired", t, body)},v1=${computeSignature("whsec_old", t, body)}`;
    const res = await publish(h, body, { key: null, headers: { "rendezvous-signature": header } });
    expect(res.statusCode).toBe(202);
  });

  it("every failure is the same 401 with no hint of which part failed, and stores nothing", async () => {
    const h = await makeApp();
    const body = JSON.stringify(ev("u1"));
    const t = nowSec();
    const goodSig = signature("whsec_new", body, t);
    const cases: Array<[string, Record<string, string | undefined>]> = [
      ["no credential", { "rendezvous-producer": "acme/billing" }],
      ["no producer header", { authorization: "Bearer pk_billing" }],
      ["unknown key", { "rendezvous-producer": "acme/billing", authorization: "Bearer pk_nope" }],
      ["another producer's key", { "rendezvous-producer": "acme/billing", authorization: "Bearer pk_ship" }],
      ["unknown producer", { "rendezvous-producer": "acme/nobody", authorization: "Bearer pk_billing" }],
      ["unknown tenant", { "rendezvous-producer": "nobody/billing", authorization: "Bearer pk_billing" }],
      ["no slash", { "rendezvous-producer": "acme", authorization: "Bearer pk_billing" }],
      ["extra part", { "rendezvous-producer": "acme/billing/x", authorization: "Bearer pk_billing" }],
      ["prototype name", { "rendezvous-producer": "__proto__/constructor", authorization: "Bearer pk_billing" }],
      ["not bearer", { "rendezvous-producer": "acme/billing", authorization: "Basic cGtfYmlsbGluZw==" }],
      ["bearer without token", { "rendezvous-producer": "acme/billing", authorization: "Bearer " }],
      ["host key", { "rendezvous-producer": "acme/billing", authorization: "Bearer hk_acme" }],
      ["admin token", { "rendezvous-producer": "acme/billing", authorization: "Bearer adm_test_token" }],
      [
        "bad signature",
        { "rendezvous-producer": "acme/billing", "rendezvous-signature": `t=${t},v1=${"0".repeat(64)}` },
      ],
      ["malformed signature", { "rendezvous-producer": "acme/billing", "rendezvous-signature": "garbage" }],
      ["signature without v1", { "rendezvous-producer": "acme/billing", "rendezvous-signature": `t=${t}` }],
      ["short v1", { "rendezvous-producer": "acme/billing", "rendezvous-signature": `t=${t},v1=abcd` }],
      [
        "signature for another tenant's producer",
        { "rendezvous-producer": "globex/billing", "rendezvous-signature": goodSig },
      ],
      [
        "good key, bad signature",
        {
          "rendezvous-producer": "acme/billing",
          authorization: "Bearer pk_billing",
          "rendezvous-signature": `t=${t},v1=${"1".repeat(64)}`,
        },
      ],
    ];
    for (const [label, headers] of cases) {
      const res = await h.app.inject({
        method: "POST",
        url: "/v1/events",
        payload: body,
        headers: { "content-type": "application/json", ...headers },
      });
      expect(res.statusCode, label).toBe(401);
      expect(res.json(), label).toEqual(UNAUTHORIZED);
    }
    // the batch route alike
    const batch = await h.app.inject({
      method: "POST",
      url: "/v1/events/batch",
      payload: { events: [ev("u2")] },
      headers: { "rendezvous-producer": "acme/billing", authorization: "Bearer wrong" },
    });
    expect(batch.statusCode).toBe(401);
    expect(batch.json()).toEqual(UNAUTHORIZED);
    expect(await snapshot(h)).toEqual({});
    expect(await streamLength(h)).toBe(0);
  });

  it("an unauthenticated request gets 401, not validation feedback", async () => {
    const h = await makeApp();
    const res = await publish(h, "not json at all", { key: "pk_wrong" });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(UNAUTHORIZED);
  });

  it("the timestamp must lie within 300 s of now, either way", async () => {
    const h = await makeApp();
    const now = nowSec();
    expect((await publish(h, ev("t1"), { secret: "whsec_new", t: now - 290 })).statusCode).toBe(202);
    expect((await publish(h, ev("t2"), { secret: "whsec_new", t: now + 290 })).statusCode).toBe(202);
    expect((await publish(h, ev("t3"), { secret: "whsec_new", t: now - 310 })).statusCode).toBe(401);
    expect((await publish(h, ev("t4"), { secret: "whsec_new", t: now + 310 })).statusCode).toBe(401);
  });

  it("a fixed clock: exactly 300 s is accepted, 301 s is not", async () => {
    const fixed = 1_900_000_000_000;
    const h = await makeApp({}, { now: () => fixed });
    const t = fixed / 1000;
    expect((await publish(h, ev("b1"), { secret: "whsec_new", t: t - 300 })).statusCode).toBe(202);
    expect((await publish(h, ev("b2"), { secret: "whsec_new", t: t + 300 })).statusCode).toBe(202);
    expect((await publish(h, ev("b3"), { secret: "whsec_new", t: t - 301 })).statusCode).toBe(401);
    expect((await publish(h, ev("b4"), { secret: "whsec_new", t: t + 301 })).statusCode).toBe(401);
  });

  it("a replayed signature with a new timestamp fails; a tampered body fails", async () => {
    const h = await makeApp();
    const body = JSON.stringify(ev("rp1"));
    const old = nowSec() - 10;
    const v1 = createHmac("sha256", "whsec_new").update(`${old}.${body}`).digest("hex");
    const ok = await publish(h, body, { key: null, headers: { "rendezvous-signature": `t=${old},v1=${v1}` } });
    expect(ok.statusCode).toBe(202);
    const replayed = await publish(h, body, {
      key: null,
      headers: { "rendezvous-signature": `t=${nowSec()},v1=${v1}` },
    });
    expect(replayed.statusCode).toBe(401);
    const tampered = await publish(h, body.replace("rp1", "rp2"), {
      key: null,
      headers: { "rendezvous-signature": `t=${old},v1=${v1}` },
    });
    expect(tampered.statusCode).toBe(401);
    // the signature covers the raw bytes: re-serialized JSON with other whitespace does not verify
    const spaced = JSON.stringify(JSON.parse(body), null, 2);
    const reformatted = await publish(h, spaced, {
      key: null,
      headers: { "rendezvous-signature": `t=${old},v1=${v1}` },
    });
    expect(reformatted.statusCode).toBe(401);
    expect(await streamLength(h)).toBe(1);
  });

  it("headers claiming tenant B with tenant A's credential are refused; B's data is untouched", async () => {
    const h = await makeApp();
    const byKey = await publish(h, ev("x1"), { producer: "globex/billing", key: "pk_billing" });
    expect(byKey.statusCode).toBe(401);
    const bySig = await publish(h, ev("x2"), { producer: "globex/billing", secret: "whsec_new" });
    expect(bySig.statusCode).toBe(401);
    const own = await publish(h, ev("x3"), { producer: "globex/billing", key: "pk_globex" });
    expect(own.statusCode).toBe(202);
    expect(own.json().event.tenant).toBe("globex");
    expect(await h.store.getEvent("acme", "billing", "x3")).toBeNull();
    expect(await streamLength(h)).toBe(1);
  });

  it("parses signature headers strictly", () => {
    const hex = "a".repeat(64);
    expect(parseSignatureHeader(`t=1,v1=${hex}`)).toMatchObject({ t: 1 });
    expect(parseSignatureHeader(` t=1 , v1=${hex} , v0=zz`)).toMatchObject({ t: 1 });
    for (const bad of ["", "t=1", `v1=${hex}`, `t=x,v1=${hex}`, `t=1,t=2,v1=${hex}`, `t=-1,v1=${hex}`, "t=1,v1=zz"]) {
      expect(parseSignatureHeader(bad), bad).toBeNull();
    }
  });
});

describe("keys stored as HMACs under the registry's secret key", () => {
  const key = SecretKey.generate();
  const records = {
    tenants: new Map([["acme", { createdAt: 1, updatedAt: 1 }]]),
    producers: new Map([
      [
        "acme/billing",
        {
          eventTypes: ["order.*"],
          keys: [
            { id: "pk_new", mac: key.mac("pk_weak_new"), createdAt: 1 },
            { id: "pk_old", hash: keyHash("pk_weak_old"), createdAt: 1 },
          ],
          secrets: [],
          createdAt: 1,
          updatedAt: 1,
        },
      ],
    ]),
    hostKeys: new Map([
      ["hk_new", { tenant: "acme", mac: key.mac("hk_weak_new"), createdAt: 1 }],
      ["hk_old", { tenant: "acme", hash: keyHash("hk_weak_old"), createdAt: 1 }],
    ]),
    eventTypes: new Map(),
  };
  const index = indexView(viewOfRecords(1, records, key).view, "adm_x");
  const host = (token: string) => authenticateHost(index, { authorization: `Bearer ${token}` });
  const producer = (token: string) =>
    authenticateProducerHeaders(index, { "rendezvous-producer": "acme/billing", authorization: `Bearer ${token}` });

  it("an HMAC-stored key and an earlier version's SHA-256-stored key both authenticate", () => {
    expect(host("hk_weak_new")).toEqual({ kind: "host", tenant: "acme" });
    expect(host("hk_weak_old")).toEqual({ kind: "host", tenant: "acme" });
    expect(producer("pk_weak_new").identity.producer).toBe("billing");
    expect(producer("pk_weak_old").identity.producer).toBe("billing");
  });

  it("a connection's key is digested once while it sends the same one; a revoked key is still refused at once", () => {
    let macs = 0;
    const mac = (text: string) => {
      macs++;
      return key.mac(text);
    };
    const counted = { ...index, mac };
    const conn = {};
    const headers = (token: string) => ({ "rendezvous-producer": "acme/billing", authorization: `Bearer ${token}` });
    expect(authenticateProducerHeaders(counted, headers("pk_weak_new"), Date.now(), conn).identity.producer).toBe(
      "billing",
    );
    expect(authenticateProducerHeaders(counted, headers("pk_weak_new"), Date.now(), conn).identity.producer).toBe(
      "billing",
    );
    // (a producer key is no host key: refused, from the same digests)
    expect(() => authenticateHost(counted, { authorization: "Bearer pk_weak_new" }, Date.now(), conn)).toThrow(
      /unauthorized/,
    );
    expect(macs).toBe(1); // the digests of the connection's token, once
    // another token on the same connection is digested (and refused) on its own
    expect(() => authenticateProducerHeaders(counted, headers("pk_weak_nope"), Date.now(), conn)).toThrow(
      /unauthorized/,
    );
    expect(macs).toBe(2);
    // the key revoked (the same secret key: the digests kept are still good): refused on a connection that used it
    const revoked = indexView(
      viewOfRecords(
        2,
        {
          ...records,
          producers: new Map([
            [
              "acme/billing",
              {
                ...(records.producers.get("acme/billing") as NonNullable<ReturnType<typeof records.producers.get>>),
                keys: [],
              },
            ],
          ]),
        },
        key,
      ).view,
      undefined,
    );
    const conn2 = {};
    const revokedCounted = { ...revoked, mac };
    expect(() => authenticateProducerHeaders(revokedCounted, headers("pk_weak_new"), Date.now(), conn2)).toThrow(
      /unauthorized/,
    );
    expect(authenticateProducerHeaders(counted, headers("pk_weak_new"), Date.now(), conn2).identity.producer).toBe(
      "billing",
    );
    expect(() => authenticateProducerHeaders(revokedCounted, headers("pk_weak_new"), Date.now(), conn2)).toThrow(
      /unauthorized/,
    );
    // a new secret key (another digest function) digests the token again
    const other = SecretKey.generate();
    const rekeyed = indexView(viewOfRecords(3, records, other).view, undefined);
    expect(() => authenticateProducerHeaders(rekeyed, headers("pk_weak_new"), Date.now(), conn2)).toThrow(
      /unauthorized/,
    );
  });

  it("the plain SHA-256 of a key does not stand for its HMAC, nor a key under another secret key", () => {
    const other = SecretKey.generate();
    const forged = indexView(
      viewOfRecords(
        1,
        {
          ...records,
          hostKeys: new Map([["hk_x", { tenant: "acme", mac: keyHash("hk_weak_new"), createdAt: 1 }]]),
        },
        key,
      ).view,
      undefined,
    );
    expect(() => authenticateHost(forged, { authorization: "Bearer hk_weak_new" })).toThrow(/unauthorized/);
    const elsewhere = indexView(viewOfRecords(1, records, other).view, undefined);
    expect(() => authenticateHost(elsewhere, { authorization: "Bearer hk_weak_new" })).toThrow(/unauthorized/);
    expect(() => host("hk_weak_nope")).toThrow(/unauthorized/);
    expect(() => producer("pk_weak_nope")).toThrow(/unauthorized/);
  });
});
