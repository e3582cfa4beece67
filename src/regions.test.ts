import * as fs from 'fs';
import * as path from 'path';

import {
  closestRegion,
  endpointURLError,
  isRegionName,
  PROMQL_REGIONS,
  regionErrors,
  regionNameError,
  splitRegions,
} from './regions';
import { mulberry32 } from './testing';

describe('splitRegions', () => {
  it.each<[string | undefined, string[]]>([
    [undefined, []],
    ['', []],
    [' , ,', []],
    ['us-east-1', ['us-east-1']],
    [' us-east-1 , us-west-2 ', ['us-east-1', 'us-west-2']],
    ['us-west-2,us-east-1,us-west-2', ['us-west-2', 'us-east-1']],
    ['{us-east-1,eu-west-1}', ['us-east-1', 'eu-west-1']],
    ['$region,eu-west-1', ['$region', 'eu-west-1']],
  ])('%p → %p', (value, regions) => {
    expect(splitRegions(value)).toEqual(regions);
  });

  it('gives trimmed, non-empty, distinct items and is stable on its own output, for random input', () => {
    const next = mulberry32(15);
    const alphabet = ['us-east-1', 'eu-west-1', ',', ' ', '{', '}', '$region', 'a', '-'];
    for (let n = 0; n < 500; n++) {
      const text = Array.from(
        { length: Math.floor(next() * 12) },
        () => alphabet[Math.floor(next() * alphabet.length)]
      ).join('');
      const regions = splitRegions(text);
      for (const r of regions) {
        expect(r).toBe(r.trim());
        expect(r).not.toBe('');
        expect(r).not.toContain(',');
      }
      expect(new Set(regions).size).toBe(regions.length);
      // What the frontend sends (joined) reads back the same.
      expect(splitRegions(regions.join(','))).toEqual(regions);
    }
  });
});

describe('region names', () => {
  it('knows the 31 PromQL regions, each a region name', () => {
    expect(new Set(PROMQL_REGIONS).size).toBe(31);
    expect(PROMQL_REGIONS.filter((r) => !isRegionName(r))).toEqual([]);
  });

  it("lists the backend's PromQL regions (awsauth.PromQLRegions), in order", () => {
    const go = fs.readFileSync(path.join(__dirname, '..', 'pkg', 'awsauth', 'region.go'), 'utf8');
    const block = /var PromQLRegions = \[\]string\{([^}]*)\}/.exec(go);
    expect(block).not.toBeNull();
    expect(Array.from(block![1].matchAll(/"([^"]+)"/g), (m) => m[1])).toEqual(PROMQL_REGIONS);
  });

  it.each([
    ['us-east-1', true],
    ['us-gov-west-1', true],
    ['cn-north-1', true],
    ['us-east1', false],
    ['US-EAST-1', false],
    ['$region', false],
    ['us-east-1 ', false],
    ['', false],
  ])('isRegionName(%p) = %p', (name, ok) => {
    expect(isRegionName(name)).toBe(ok);
  });

  it.each([
    ['us-east1', 'us-east-1'],
    ['US-EAST-1', 'us-east-1'],
    ['euwest-1', 'eu-west-1'],
    ['ap-southeast1', 'ap-southeast-1'],
  ])('suggests the region %p was meant to be', (typo, meant) => {
    expect(closestRegion(typo)).toBe(meant);
    expect(regionNameError(typo)).toBe(`"${typo}" is not an AWS region name (like us-east-1); did you mean ${meant}?`);
  });

  it('suggests nothing for a name far from every region, and nothing for a region name', () => {
    expect(regionNameError('production')).toBe('"production" is not an AWS region name (like us-east-1)');
    expect(regionNameError('us-east-1')).toBeUndefined();
    // A valid name that is not a PromQL region is still a region name (the backend decides).
    expect(regionNameError('il-central-1')).toBeUndefined();
  });

  it('leaves template variables to run time only when they are allowed', () => {
    expect(regionErrors(['$region', 'us-east-1'], true)).toEqual([]);
    expect(regionErrors(['$region', 'us-east-1'], false)).toEqual([
      '"$region" is not an AWS region name (like us-east-1)',
    ]);
    expect(regionErrors(['us-east1', '${region}', 'eu-west-1'], true)).toEqual([
      '"us-east1" is not an AWS region name (like us-east-1); did you mean us-east-1?',
    ]);
  });
});

describe('endpointURLError', () => {
  it.each([
    'https://monitoring.us-west-2.amazonaws.com',
    'https://emulator.example.com:8443/base',
    'http://127.0.0.1:9090',
    'http://localhost:9091',
    'http://[::1]:9092',
  ])('accepts %s', (url) => {
    expect(endpointURLError(url)).toBeUndefined();
  });

  it.each([
    ['monitoring.us-west-2.amazonaws.com', /is not an absolute URL/],
    ['http://10.0.0.5:9090', /must use https \(plain http only to 127\.0\.0\.1, ::1 or localhost\)/],
    ['http://127.0.0.1.evil.com', /must use https/],
    ['ftp://127.0.0.1', /must use https/],
    ['https://user:pw@example.com', /must not carry user credentials/],
    ['https://example.com/?a=1', /must not have a query or fragment/],
  ])('refuses %s', (url, message) => {
    expect(endpointURLError(url)).toMatch(message);
  });
});
