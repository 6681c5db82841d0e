/**
 * A fake payment provider: `POST /charges {amount, idempotencyKey}` starts a charge
 * (idempotent on the key: a retry gets the same charge) and settles it a little
 * later by publishing `payment.settled` to rendezvous, signed with its producer
 * secret, with the idempotency key as correlation id. Amounts ending in 13 fail:
 * it publishes `payment.failed` instead. Amount 0 never settles.
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { ProducerClient } from "@rendezvous/client";

export interface Provider {
  url: string;
  /** charges started, by idempotency key */
  charges: Map<string, string>;
  close(): Promise<void>;
}

export async function startProvider(events: ProducerClient, settleAfterMs = 300): Promise<Provider> {
  const charges = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => {
      body += d;
    });
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/charges") {
        res.writeHead(404).end();
        return;
      }
      const { amount, idempotencyKey } = JSON.parse(body) as { amount: number; idempotencyKey: string };
      let chargeId = charges.get(idempotencyKey);
      if (!chargeId) {
        chargeId = `ch_${randomUUID().slice(0, 8)}`;
        charges.set(idempotencyKey, chargeId);
        const id = chargeId;
        if (amount !== 0) {
          setTimeout(() => {
            const failed = amount % 100 === 13;
            void events.publish({
              id: `${id}.${failed ? "failed" : "settled"}`,
              type: failed ? "payment.failed" : "payment.settled",
              correlationId: idempotencyKey,
              payload: { chargeId: id, amount },
            });
          }, settleAfterMs);
        }
      }
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ chargeId }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    charges,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
