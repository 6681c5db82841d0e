/**
 * The floor of bench:api-path: a bare fastify server (the product's fastify, no hooks, no
 * logger) whose `POST /v1/events` reads the body as bytes and answers 202 with a fixed JSON
 * of the product's answer size. What Node's HTTP and fastify cost per request on this
 * machine, with nothing of the product. Prints `listening on http://…"` as the CLI does.
 * Run as a child: `node --import tsx bench/lib/floor-server.ts`.
 */
import Fastify from "fastify";

const ANSWER =
  '{"status":"accepted","event":{"id":"e-000000000000","tenant":"acme","producer":"svc","type":"order.paid",' +
  '"correlationId":"c-000000000000","occurredAt":null,"acceptedAt":"2026-12-01T00:00:00.000Z",' +
  '"streamId":"1764547200000-0","status":"pending","matchedWaits":[],"lateFor":[]}}';

const app = Fastify({ logger: false });
app.removeAllContentTypeParsers();
app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
app.post("/v1/events", (_request, reply) => {
  void reply.code(202).type("application/json; charset=utf-8").send(ANSWER);
});
app.get("/readyz", (_request, reply) => {
  void reply.send({ ready: true });
});
const address = await app.listen({ host: "127.0.0.1", port: 0 });
process.stdout.write(`{"msg":"listening on ${address}"}\n`);
process.on("SIGTERM", () => {
  void app.close().then(() => process.exit(0));
});
