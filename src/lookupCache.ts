/** How long discovery answers are reused: CloudWatch allows 10 discovery calls/s per account. */
export const CACHE_TTL_MS = 60_000;

/**
 * Discovery answers kept for CACHE_TTL_MS by key, as promises: callers asking while a call is
 * in flight share it, so a burst of identical lookups costs one request. A failed call is
 * dropped at once, so the next ask retries it.
 */
export class LookupCache {
  private readonly entries = new Map<string, { at: number; value: Promise<unknown> }>();

  constructor(private readonly now: () => number = Date.now) {}

  get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && this.now() - hit.at < CACHE_TTL_MS) {
      return hit.value as Promise<T>;
    }
    const value = load();
    const entry = { at: this.now(), value };
    this.entries.set(key, entry);
    value.catch(() => {
      // Only this call's entry: a newer one set meanwhile stays.
      if (this.entries.get(key) === entry) {
        this.entries.delete(key);
      }
    });
    return value;
  }
}
