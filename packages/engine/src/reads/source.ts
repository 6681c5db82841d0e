import type { KeyLayout } from "../keys.js";
import type { RedisLike } from "../redis.js";

/** What every read of partition keys needs: a connection and the key layout (a Store has both). */
export interface ReaderSource {
  readonly redis: RedisLike;
  readonly keys: KeyLayout;
}
