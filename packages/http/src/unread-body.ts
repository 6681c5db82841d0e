/**
 * Answers given before a request's body was read: the connection is closed after the
 * answer, not kept alive. Kept alive, Node would read and discard the rest of the body
 * before the next request, so a refused client (a wrong key, an exhausted body budget)
 * could still make the server read all it declared. A `413` keeps its own lingering
 * close (see `lingerAfterTooLarge`) so a client still writing reads the answer.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/**
 * How long a connection closed after an early answer still takes (and discards) what
 * its client writes before it is destroyed.
 */
export const LINGER_MS = 1000;

/** Whether the client went away before its whole request arrived (an aborted upload). */
export function clientAborted(request: FastifyRequest): boolean {
  return request.raw.readableAborted || (request.raw.destroyed && !request.raw.complete);
}

/**
 * After the answer, Node half-closes the socket (the FIN follows the answer) and
 * destroys it as soon as that is flushed. Destroyed while the client is still writing,
 * the kernel answers the client's next bytes with a reset, and a client busy writing
 * may lose the answer with it. Like nginx's lingering close, the socket is kept for
 * LINGER_MS first, what arrives read and thrown away (nothing is held), then destroyed.
 */
function lingerAfterAnswer(request: FastifyRequest, reply: FastifyReply): void {
  const socket = request.raw.socket;
  reply.raw.once("finish", () => {
    if (socket.destroyed || socket.writableFinished) return;
    socket.removeListener("finish", socket.destroy);
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once("close", () => clearTimeout(timer));
    request.raw.resume(); // what still arrives is parsed and dropped
  });
}

/** Closes the connection after any answer sent before the request's body arrived whole. */
export function closeUnreadBodies(app: FastifyInstance): void {
  // a callback hook, not an async one: it runs on every answer
  app.addHook("onSend", (request, reply, payload, done) => {
    // light-my-request's requests (inject) have no `complete`: they are always whole
    if (request.raw.complete === false && reply.statusCode !== 413) {
      void reply.header("connection", "close");
      lingerAfterAnswer(request, reply);
    }
    done(null, payload);
  });
}
