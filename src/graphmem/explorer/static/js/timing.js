// Performance measures ("graphmem: ..." in the browser's performance timeline and its profiler),
// so that where the time of a view goes can be read without guessing. They cost microseconds.

/** Run `work()` (sync or async) and record how long it took as the measure `graphmem: name`. */
export function timed(name, work) {
  const start = performance.now();
  const done = () => performance.measure("graphmem: " + name, { start });
  const result = work();
  if (result && typeof result.then === "function") return result.finally(done);
  done();
  return result;
}
