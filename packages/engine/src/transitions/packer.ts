import { RendezvousError } from "@rendezvous/protocol";

/**
 * A packed argument: fields one after the other, each a 5-character length header
 * (UTF-8 bytes, base 64, digit = char code − 48, most significant first) and the
 * value. Lua reads the header with string.byte (nextField in the Lua includes): no
 * number parsing. Built as a Buffer in one pass: each value is encoded once, straight
 * into place (a string would be measured, then measured and encoded again by ioredis).
 */
export class Packer {
  #buf: Buffer;
  #at = 0;

  constructor(expectedChars = 4096) {
    this.#buf = Buffer.allocUnsafe(expectedChars + 64);
  }

  field(value: string): this {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit
    const room = this.#at + 5 + value.length * 3;
    if (room > this.#buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(room, this.#buf.length * 2));
      this.#buf.copy(grown, 0, 0, this.#at);
      this.#buf = grown;
    }
    const n = this.#buf.write(value, this.#at + 5, "utf8");
    if (n >= 2 ** 30) throw new RendezvousError("payload_too_large", "a packed field is limited to 1 GiB");
    const b = this.#buf;
    const at = this.#at;
    b[at] = 48 + (n >>> 24);
    b[at + 1] = 48 + ((n >>> 18) & 63);
    b[at + 2] = 48 + ((n >>> 12) & 63);
    b[at + 3] = 48 + ((n >>> 6) & 63);
    b[at + 4] = 48 + (n & 63);
    this.#at = at + 5 + n;
    return this;
  }

  /** The packed bytes (a view: the packer is done with them). */
  done(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }
}
