import { durationMs } from './sharedStore';

describe('durationMs', () => {
  // What Go's time.ParseDuration answers for each (in ms), or undefined where it fails.
  it.each<[string, number | undefined]>([
    ['50ms', 50],
    ['2s', 2000],
    ['1.5s', 1500],
    ['.5s', 500],
    ['1.s', 1000],
    ['1m30s', 90_000],
    ['1h', 3_600_000],
    ['500us', 0.5],
    ['500µs', 0.5],
    ['100ns', 0.0001],
    ['+50ms', 50],
    ['-1s', -1000],
    ['0', 0],
    ['0s', 0],
    ['', undefined],
    ['50', undefined],
    ['1d', undefined],
    ['ms', undefined],
    ['.s', undefined],
    ['50 ms', undefined],
    [' 50ms', undefined],
    ['1s2', undefined],
    ['--1s', undefined],
  ])('%j is %p ms', (text, ms) => {
    const got = durationMs(text);
    if (ms === undefined) {
      expect(got).toBeUndefined();
    } else {
      expect(got).toBeCloseTo(ms, 9);
    }
  });
});
