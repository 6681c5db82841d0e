/** Seeded PRNG (mulberry32): reproducible randomness for tests and benchmarks. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed from RENDEZVOUS_SEED, else a fresh one; printed so a failure can be replayed. */
export function seedFromEnv(label: string): number {
  const fromEnv = process.env.RENDEZVOUS_SEED;
  const seed = fromEnv ? Number(fromEnv) : Math.floor(Math.random() * 2 ** 31);
  console.log(`${label}: seed ${seed} (replay with RENDEZVOUS_SEED=${seed})`);
  return seed;
}
