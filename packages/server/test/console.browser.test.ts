/**
 * The operator console in headless Chromium against the real CLI (`rendezvous
 * start`, every role) and the run's private Redis: the explain verdict and its
 * near-miss evidence, a wait turning resolved live when its event arrives, cancel
 * and deliver behind their confirmations, the event and rejection pages, paging, and
 * a host key confined to its tenant.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Browser, ensureConsoleBuilt, launchBrowser, signIn } from "./console-browser.js";
import { bearer, type Client, client, producerKey, type Started, startServer, until } from "./e2e-helpers.js";

const ADMIN = "adm_console_test";
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  tenants: {
    acme: {
      hostKeys: ["hk_acme_console"],
      producers: { billing: { keys: ["pk_billing_console"], eventTypes: ["order.*"] } },
    },
    globex: {
      hostKeys: ["hk_globex_console"],
      producers: { shop: { keys: ["pk_shop_console"], eventTypes: ["order.*"] } },
    },
  },
  eventTypes: {
    "order.paid": {
      payloadSchema: { type: "object", required: ["amount"], properties: { amount: { type: "number" } } },
    },
  },
};

let server: Started;
let browser: Browser;
let acme: Client;
let globex: Client;
let billing: Client;
let admin: Client;
/** page updates poll every 1.5 s; allow a few rounds */
const P = { timeout: 15_000, interval: 100 };
const run = `run-${Date.now().toString(36)}`;
/** what Chromium reported as refused by the console's Content-Security-Policy, in any page */
const violations: string[] = [];

async function register(host: Client, position: string, correlationId: string, eventType = "order.paid") {
  const r = await host.post("/v1/waits", { runId: run, position, eventType, correlationId, timeoutMs: 600_000 });
  expect(r.status).toBe(201);
  return r.body.wait.id as string;
}

async function newPage(): Promise<Page> {
  return browser.context.newPage();
}

beforeAll(async () => {
  ensureConsoleBuilt();
  server = await startServer({ config: CONFIG });
  acme = client(server.url, bearer("hk_acme_console"));
  globex = client(server.url, bearer("hk_globex_console"));
  admin = client(server.url, bearer(ADMIN));
  billing = client(server.url, producerKey("acme/billing", "pk_billing_console"));
  browser = await launchBrowser();
  browser.context.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.proc.terminate();
});

describe("console (headless Chromium, real server and Redis)", () => {
  it("shows correlation_mismatch with the near-miss event, then turns resolved live with the resolving event", async () => {
    const id = await register(acme, "charge#1", "ord-1001");
    // the producer sends the right type with a mistyped correlation id: buffered, a near miss
    const miss = await billing.post("/v1/events", {
      id: "evt-typo",
      type: "order.paid",
      correlationId: "ord-1O01",
      payload: { amount: 1 },
    });
    expect(miss.status, miss.text).toBe(202);
    await until(async () => {
      const r = await acme.get(`/v1/waits/${id}/explain`);
      return r.body.verdict === "correlation_mismatch";
    });

    const page = await newPage();
    await signIn(page, server.url, ADMIN, `/waits/${id}`);
    await expect.poll(() => page.getByTestId("verdict").textContent(), P).toBe("correlation_mismatch");
    const nearMisses = page.getByRole("table", { name: "Near-miss events" });
    await expect.poll(() => nearMisses.textContent(), P).toContain("billing/evt-typo");
    expect(await nearMisses.textContent()).toContain("ord-1O01");
    expect(await page.getByTestId("state").textContent()).toBe("waiting");

    // the right event arrives while the page is open
    const hit = await billing.post("/v1/events", {
      id: "evt-right",
      type: "order.paid",
      correlationId: "ord-1001",
      payload: { amount: 4200 },
    });
    expect(hit.status).toBe(202);
    await expect.poll(() => page.getByTestId("state").textContent(), P).toBe("resolved");
    await expect.poll(() => page.getByTestId("verdict").textContent(), P).toBe("resolved");
    expect(await page.getByTestId("resolution-kind").textContent()).toBe("event");
    expect(await page.getByTestId("resolving-event").textContent()).toBe("billing/evt-right");
    expect(await page.getByLabel("Payload of the resolving event").textContent()).toContain('"amount": 4200');
    // the timeline is a vertical sequence that now ends after the resolution
    const timeline = await page.getByRole("list", { name: "Timeline" }).locator("li").allTextContents();
    expect(timeline[0]).toContain("registered");
    expect(timeline.some((t) => t.includes("resolved"))).toBe(true);
    // the continuation job, linked into Bull Board for the admin
    const boardLink = page.getByRole("link", { name: "Open the job in Bull Board" });
    await boardLink.waitFor({ timeout: 15_000 });
    expect(await boardLink.getAttribute("href")).toBe(`/admin/queues/queue/continuations.acme/${id}`);

    // and back: Bull Board's menu links to the console
    const board = await admin.get("/admin/queues/");
    expect(board.status).toBe(200);
    expect(board.text).toContain('"miscLinks":[{"text":"Rendezvous console","url":"/console/"}]');

    // the resolving event's page: matched, naming the wait
    await page.getByTestId("resolving-event").click();
    await expect.poll(() => page.getByTestId("event-status").textContent(), P).toBe("matched");
    expect(await page.getByRole("link", { name: id }).count()).toBe(1);
    await page.close();
  });

  it("cancels a wait from the UI after confirmation", async () => {
    const id = await register(acme, "cancel#1", "ord-2001");
    const page = await newPage();
    await signIn(page, server.url, ADMIN, `/waits/${id}`);
    await expect.poll(() => page.getByTestId("state").textContent(), P).toBe("waiting");
    await page.getByRole("button", { name: "Cancel wait" }).click();
    const dialog = page.getByRole("dialog", { name: "Cancel this wait?" });
    await dialog.waitFor();
    // "keep as is" changes nothing
    await dialog.getByRole("button", { name: "Keep as is" }).click();
    expect((await acme.get(`/v1/waits/${id}`)).body.wait.state).toBe("waiting");
    await page.getByRole("button", { name: "Cancel wait" }).click();
    await dialog.getByRole("button", { name: "Yes, cancel the wait" }).click();
    await expect.poll(() => page.getByTestId("state").textContent(), P).toBe("cancelled");
    const after = await acme.get(`/v1/waits/${id}`);
    expect(after.body.wait.state).toBe("cancelled");
    expect(after.body.wait.resolution.kind).toBe("cancel");
    await page.close();
  });

  it("delivers to a wait, refusing an ambiguous delivery as the API does", async () => {
    const a = await register(acme, "deliver#1", "ord-3001", "order.shipped");
    const b = await register(acme, "deliver#2", "ord-3001", "order.shipped");
    const page = await newPage();
    await signIn(page, server.url, ADMIN, `/waits/${a}`);
    await page.getByRole("button", { name: "Deliver…" }).click();
    const dialog = page.getByRole("dialog", { name: "Deliver to this wait?" });
    await dialog.getByLabel("Payload (JSON object)").fill('{"carrier":"ups"}');
    await dialog.getByRole("button", { name: "Deliver", exact: true }).click();
    await expect.poll(() => dialog.getByRole("alert").textContent(), P).toContain("ambiguous (409)");
    for (const w of [a, b]) expect((await acme.get(`/v1/waits/${w}`)).body.wait.state).toBe("waiting");
    await dialog.getByRole("button", { name: "Keep as is" }).click();

    // with one candidate left, the delivery resolves it
    expect((await acme.delete(`/v1/waits/${b}`)).status).toBe(200);
    await page.getByRole("button", { name: "Deliver…" }).click();
    await dialog.getByRole("button", { name: "Deliver", exact: true }).click();
    await expect.poll(() => page.getByTestId("state").textContent(), P).toBe("resolved");
    expect(await page.getByTestId("resolution-kind").textContent()).toBe("deliver");
    const w = (await acme.get(`/v1/waits/${a}`)).body.wait;
    expect(w.resolution).toMatchObject({ kind: "deliver", payload: { carrier: "ups" } });
    await page.close();
  });

  it("lists waits with filters and cursor paging, and shows rejected signals", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await register(acme, `page#${i}`, `ord-page-${i}`, "order.page"));
    // a refused event: the payload breaks the type's schema
    const bad = await billing.post("/v1/events", {
      id: "evt-bad",
      type: "order.paid",
      correlationId: "ord-9",
      payload: {},
    });
    expect(bad.status).toBe(400);

    const page = await newPage();
    await signIn(page, server.url, ADMIN, "/waits");
    await page.getByLabel("Tenant").selectOption("acme");
    await page.getByLabel("Event type").fill("order.page");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => page.locator("tbody tr").count(), P).toBe(7);
    expect(page.url()).toContain("eventType=order.page");

    // the same listing 3 at a time through the cursor: every wait once, in three pages
    const seen: string[] = [];
    const res = await admin.get("/console/api/waits?tenant=acme&eventType=order.page&limit=3");
    let body = res.body;
    expect(res.headers.get("server-timing")).toMatch(/^app;dur=\d+(\.\d+)?$/);
    for (;;) {
      seen.push(...body.waits.map((w: { id: string }) => w.id));
      if (!body.nextCursor) break;
      body = (await admin.get(`/console/api/waits?tenant=acme&eventType=order.page&limit=3&cursor=${body.nextCursor}`))
        .body;
    }
    expect(seen.sort()).toEqual([...ids].sort());

    await page.getByRole("link", { name: "Rejected signals" }).click();
    const rows = page.locator("tbody tr");
    await expect.poll(() => rows.count(), P).toBeGreaterThan(0);
    const text = await rows.first().textContent();
    expect(text).toContain("invalid_event");
    expect(text).toContain("billing/evt-bad");
    await page.close();
  });

  it("shows the HTTP error rate and the queue depths on the overview after a small workload with a 4xx", async () => {
    // a continuation no worker takes (it waits on continuations.acme) and two 4xx answers
    const id = await register(acme, "figures#1", "ord-figures");
    const paid = await billing.post("/v1/events", {
      id: "evt-figures",
      type: "order.paid",
      correlationId: "ord-figures",
      payload: { amount: 7 },
    });
    expect(paid.status).toBe(202);
    expect((await acme.get("/v1/waits/no-such-wait")).status).toBe(404);
    const bad = await billing.post("/v1/events", { id: "evt-bad", type: "order.paid", correlationId: "x" });
    expect(bad.status).toBe(400);
    await until(async () =>
      (await acme.get(`/v1/waits/${id}`)).body.wait.history.some(
        (h: { what: string }) => h.what === "continuation_dispatched",
      ),
    );

    const page = await newPage();
    await signIn(page, server.url, ADMIN, "/");
    await page.getByRole("heading", { name: "HTTP errors" }).waitFor(P);
    const httpTable = page.getByRole("table", { name: "HTTP error rate" });
    await expect
      .poll(async () => Number(await page.getByTestId("http-4xx-total").textContent()), P)
      .toBeGreaterThanOrEqual(2);
    expect(await page.getByTestId("http-4xx-share").textContent()).toMatch(/^\d+\.\d %$|^—$/);
    expect(await page.getByTestId("http-5xx-total").textContent()).toBe("0");
    expect(await httpTable.textContent()).toContain("4xx");
    expect(await page.getByRole("figure").filter({ hasText: "4xx answers" }).count()).toBe(1);
    // the 4xx share over the window shows once a sample after the errors is in (every 2 s)
    await expect.poll(() => page.getByTestId("http-4xx-share").textContent(), P).toMatch(/^\d+\.\d %$/);
    expect(Number.parseFloat((await page.getByTestId("http-4xx-share").textContent()) ?? "")).toBeGreaterThan(0);

    const queues = page.getByRole("table", { name: "Queue depths" });
    await queues.waitFor(P);
    await expect
      .poll(async () => Number(await page.getByTestId("queue-continuations-waiting").textContent()), P)
      .toBeGreaterThanOrEqual(1);
    expect(await page.getByTestId("queue-continuations-oldest").textContent()).toMatch(/^\d+(\.\d)? (s|h)$/);
    expect(await page.getByTestId("queue-webhooks").count()).toBe(1);
    expect(await page.getByTestId("queue-timeouts").count()).toBe(1);
    expect(Number(await page.getByTestId("queue-continuations.acme-waiting").textContent())).toBeGreaterThanOrEqual(1);
    await page.close();

    // a host key: its own queues, no process-wide HTTP figures, no shared queues
    const host = await newPage();
    await signIn(host, server.url, "hk_acme_console", "/");
    await host.getByRole("table", { name: "Queue depths" }).waitFor(P);
    await expect
      .poll(async () => Number(await host.getByTestId("queue-continuations-waiting").textContent()), P)
      .toBeGreaterThanOrEqual(1);
    expect(await host.getByRole("heading", { name: "HTTP errors" }).count()).toBe(0);
    expect(await host.getByTestId("queue-webhooks").count()).toBe(0);
    expect(await host.getByTestId("queue-timeouts").count()).toBe(0);
    await host.close();
  });

  it("confines a host key to its tenant", async () => {
    const mine = await register(globex, "g#1", "g-1");
    const theirs = await register(acme, "a#1", "a-1");
    const page = await newPage();
    await signIn(page, server.url, "hk_globex_console", "/waits");
    expect(await page.getByTestId("identity").textContent()).toBe("tenant globex");
    await expect.poll(() => page.locator("tbody tr").count(), P).toBeGreaterThan(0);
    const listed = await page.locator("tbody tr").allTextContents();
    expect(listed.some((t) => t.includes(mine))).toBe(true);
    expect(listed.every((t) => t.includes("globex") && !t.includes("acme"))).toBe(true);
    // no tenant filter and no Bull Board for a host key
    expect(await page.getByLabel("Tenant").count()).toBe(0);
    expect(await page.getByRole("link", { name: "Bull Board" }).count()).toBe(0);

    // another tenant's wait answers not_found
    await page.goto(`${server.url}/console/waits/${theirs}`);
    await expect.poll(() => page.getByRole("alert").textContent(), P).toContain("not_found (404)");
    // the overview counts its own tenant only
    await page.goto(`${server.url}/console/`);
    const overview = page.getByRole("table").first();
    await expect.poll(() => overview.textContent(), P).toContain("globex");
    expect(await overview.textContent()).not.toContain("acme");
    // and shows no partition backlog: the partitions are shared by every tenant
    expect(await page.getByRole("heading", { name: "Matching backlog" }).count()).toBe(0);
    // and the JSON endpoints refuse the other tenant's name and ids
    const api = client(server.url, bearer("hk_globex_console"));
    expect((await api.get("/console/api/waits?tenant=acme")).status).toBe(404);
    expect((await api.get(`/console/api/waits/${theirs}/job`)).status).toBe(404);
    expect((await api.get("/console/api/rejections?tenant=acme")).status).toBe(404);
    expect((await client(server.url).get("/console/api/overview")).status).toBe(401);
    await page.close();
  });

  it("works from the keyboard alone, with a visible focus", async () => {
    const page = await newPage();
    await page.goto(`${server.url}/console/`);
    await page.locator('input[name="token"]').waitFor(); // the page has rendered
    // (browser-side code as text: the server's tsconfig has no DOM types)
    const focused = () =>
      page.evaluate<{ tag: string; name: string | null; text: string | null; outline: string }>(`(() => {
        const el = document.activeElement;
        return { tag: el.tagName, name: el.getAttribute("name"), text: el.textContent, outline: getComputedStyle(el).outlineStyle };
      })()`);
    await page.keyboard.press("Tab");
    expect(await focused()).toMatchObject({ tag: "INPUT", name: "token", outline: "solid" });
    await page.keyboard.type(ADMIN);
    await page.keyboard.press("Enter");
    await page.getByTestId("identity").waitFor();
    await page.keyboard.press("Tab");
    expect(await focused()).toMatchObject({ tag: "A", text: "Skip to content", outline: "solid" });
    await page.keyboard.press("Tab");
    expect(await focused()).toMatchObject({ tag: "A", text: "Overview" });
    await page.keyboard.press("Tab");
    expect(await focused()).toMatchObject({ tag: "A", text: "Waits", outline: "solid" });
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Waits", level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/console/waits");
    // every form control of the page has an accessible name
    const unnamed =
      await page.evaluate<number>(`[...document.querySelectorAll("input, select, textarea, button")].filter(
      (el) => !el.labels?.length && !el.getAttribute("aria-label") && !el.textContent.trim(),
    ).length`);
    expect(unnamed).toBe(0);
    await page.close();
  });
  it("runs under its Content-Security-Policy (nothing refused), which refuses inline styles and framing", async () => {
    const page = await newPage();
    await signIn(page, server.url, ADMIN, "/");
    await page.getByRole("heading", { name: "Matching backlog" }).waitFor(P);
    await page.getByRole("link", { name: "Rejected signals" }).click();
    await page.locator("tbody tr").first().waitFor(P);
    // every page of this file so far, the admin's overview with its charts included
    expect(violations).toEqual([]);
    // the policy is enforced: an inline style attribute is refused
    await page.evaluate(`document.body.setAttribute("style", "background: red")`);
    await expect.poll(() => violations.length, P).toBeGreaterThan(0);
    expect(violations.join("\n")).toMatch(/style-src/);
    // and a page of another origin cannot frame the console
    const framer = await newPage();
    await framer.setContent(`<iframe src="${server.url}/console/"></iframe>`);
    await expect.poll(() => violations.join("\n"), P).toMatch(/frame-ancestors 'none'/);
    await framer.close();
    await page.close();
  });
});
