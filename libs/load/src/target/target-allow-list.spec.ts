import { TargetAllowList } from './target-allow-list';

describe(TargetAllowList.name, () => {
  it('unset: allows any host but link-local and cloud metadata addresses', async () => {
    const sut = TargetAllowList.parse(undefined);
    expect(await sut.refusal('http://127.0.0.1:8000/v1')).toBeNull();
    expect(await sut.refusal('http://localhost:8000/v1')).toBeNull();
    expect(await sut.refusal('http://169.254.169.254/latest/meta-data/')).toMatch(/link-local/);
    expect(await sut.refusal('http://[fe80::1]/')).toMatch(/link-local/);
    expect(await sut.refusal('http://[fd00:ec2::254]/')).toMatch(/metadata/);
    expect(await sut.refusal('http://[::ffff:169.254.169.254]/')).toMatch(/link-local/);
    expect(await sut.refusal('http://metadata.google.internal/computeMetadata/v1/')).toMatch(/metadata/);
    expect(await sut.refusal('file:///etc/passwd')).toMatch(/refused/);
  });

  it('set: allows only the listed hosts, host:port pairs and CIDRs', async () => {
    const sut = TargetAllowList.parse('127.0.0.2, 10.0.0.0/8, api.example.test:8443, [::1]');
    expect(await sut.refusal('http://127.0.0.2:9/v1')).toBeNull();
    expect(await sut.refusal('http://10.1.2.3/')).toBeNull();
    expect(await sut.refusal('https://api.example.test:8443/v1')).toBeNull();
    expect(await sut.refusal('http://[::1]:7/')).toBeNull();
    expect(await sut.refusal('http://127.0.0.1:8000/v1')).toMatch(
      /127\.0\.0\.1:8000 \(127\.0\.0\.1\) is not in FATHOM_ALLOWED_TARGETS/,
    );
    expect(await sut.refusal('https://api.example.test/v1')).toMatch(/not in FATHOM_ALLOWED_TARGETS/);
    expect(await sut.refusal('http://localhost/')).toMatch(/not in FATHOM_ALLOWED_TARGETS/);
  });

  it('refuses an entry that is none of the three forms', () => {
    expect(() => TargetAllowList.parse('10.0.0.0/99')).toThrow(/not a CIDR/);
    expect(() => TargetAllowList.parse('http://x')).toThrow(/neither/);
  });
});
