import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addressKey } from './connection-bounds.ts';

describe('addressKey: what a connection counts against for server.maxConnectionsPerAddress', () => {
  test('IPv4, also mapped into IPv6, as it is', () => {
    assert.equal(addressKey('203.0.113.7'), '203.0.113.7');
    assert.equal(addressKey('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(addressKey('127.0.0.1'), '127.0.0.1');
  });

  test('IPv6 by its /64, however it is written', () => {
    const key = '2001:db8:0:1::/64';
    for (const a of [
      '2001:db8:0:1::1',
      '2001:db8:0:1:ffff:ffff:ffff:ffff',
      '2001:0db8:0000:0001:0000:0000:0000:0002',
      '2001:db8::1:0:0:0:3',
      '2001:db8:0:1::5%eth0',
    ]) {
      assert.equal(addressKey(a), key, a);
    }
    assert.notEqual(addressKey('2001:db8:0:2::1'), key);
    assert.equal(addressKey('::1'), '0:0:0:0::/64');
    assert.equal(addressKey('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64');
    assert.equal(addressKey(undefined), 'unknown');
  });
});
