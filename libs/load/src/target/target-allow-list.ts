import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Where Fathom may send requests (campaign and shadow targets, metrics URLs): the hosts,
 * host:port pairs and CIDRs of FATHOM_ALLOWED_TARGETS (comma-separated). Unset: any host except
 * link-local addresses (169.254.0.0/16, fe80::/10) and the cloud metadata services, which hand
 * out the host's own credentials to whoever asks. A name is allowed when it is listed itself, or
 * when every address it resolves to is; the check runs before anything is sent.
 */
export class TargetAllowList {
  private readonly names = new Set<string>();
  private readonly addresses = new BlockList();
  private constructor(readonly configured: boolean) {}

  /** Throws with the entry that is neither a host, a host:port nor a CIDR. */
  static parse(text: string | undefined): TargetAllowList {
    const entries = (text ?? '')
      .split(',')
      .map((e) => e.trim().toLowerCase())
      .filter(Boolean);
    const list = new TargetAllowList(entries.length > 0);
    for (const entry of entries) {
      const cidr = /^(.+)\/(\d{1,3})$/.exec(entry);
      if (cidr) {
        const family = isIP(cidr[1]);
        const prefix = Number(cidr[2]);
        if (family === 0 || prefix > (family === 4 ? 32 : 128))
          throw new Error(`FATHOM_ALLOWED_TARGETS: ${entry} is not a CIDR`);
        list.addresses.addSubnet(cidr[1], prefix, family === 4 ? 'ipv4' : 'ipv6');
      } else if (isIP(unbracket(entry))) {
        const ip = unbracket(entry);
        list.addresses.addAddress(ip, isIP(ip) === 4 ? 'ipv4' : 'ipv6');
      } else if (/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/.test(entry)) {
        list.names.add(entry);
      } else {
        throw new Error(`FATHOM_ALLOWED_TARGETS: ${entry} is neither a host, a host:port nor a CIDR`);
      }
    }
    return list;
  }

  /** null when `url` may be sent to; otherwise why not (the URL's host named, nothing else of it). */
  async refusal(url: string): Promise<string | null> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return 'not a URL';
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      return `${parsed.protocol} URLs are refused`;
    const host = unbracket(parsed.hostname.toLowerCase());
    const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
    if (this.configured) {
      const bracketed = isIP(host) === 6 ? `[${host}]` : host;
      if (this.names.has(bracketed) || this.names.has(`${bracketed}:${port}`)) return null;
    } else if (METADATA_NAMES.has(host)) {
      return `${host} is a cloud metadata service`;
    }
    const addresses = await resolve(host);
    if (addresses.length === 0) return this.configured ? `${host} is not in FATHOM_ALLOWED_TARGETS` : null;
    for (const address of addresses) {
      const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
      if (this.configured) {
        if (!this.addresses.check(address, family))
          return `${host}:${port} (${address}) is not in FATHOM_ALLOWED_TARGETS`;
      } else if (DENIED_BY_DEFAULT.check(address, family)) {
        return `${host} (${address}) is link-local or a cloud metadata address; list it in FATHOM_ALLOWED_TARGETS to allow it`;
      }
    }
    return null;
  }
}

const METADATA_NAMES = new Set([
  'metadata.google.internal',
  'metadata',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** Link-local (where AWS, GCP and Azure serve metadata: 169.254.169.254) and other metadata services. */
const DENIED_BY_DEFAULT = (() => {
  const list = new BlockList();
  list.addSubnet('169.254.0.0', 16, 'ipv4');
  list.addSubnet('fe80::', 10, 'ipv6');
  list.addAddress('fd00:ec2::254', 'ipv6'); // AWS IMDS over IPv6
  list.addAddress('100.100.100.200', 'ipv4'); // Alibaba Cloud metadata
  list.addSubnet('::ffff:169.254.0.0', 112, 'ipv6');
  return list;
})();

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

async function resolve(host: string): Promise<string[]> {
  if (isIP(host)) return [host];
  try {
    return (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return [];
  }
}
