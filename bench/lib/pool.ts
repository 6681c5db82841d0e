/** Runs `task(i)` for i in [0, count) with at most `inFlight` running at once. */
export async function runPool(count: number, inFlight: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
}
