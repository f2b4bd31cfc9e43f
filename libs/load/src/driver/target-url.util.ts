/** `http://h:1/v1` + `/chat/completions` -> origin `http://h:1`, path `/v1/chat/completions`. */
export function targetPath(baseUrl: string, suffix: string): { origin: string; path: string } {
  const url = new URL(baseUrl);
  return { origin: url.origin, path: `${url.pathname.replace(/\/+$/, '')}${suffix}` };
}
