/** Lower-cased word and punctuation tokens. */
export function tokenize(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}']+|[^\s\p{L}\p{N}]/gu) ?? [];
}

/** Word n-grams of a text as a set (the text itself when it is shorter than n). */
export function ngramSet(text: string, n: number): Set<string> {
  const tokens = tokenize(text).filter((t) => /[\p{L}\p{N}]/u.test(t));
  const out = new Set<string>();
  if (tokens.length < n) {
    if (tokens.length > 0) out.add(tokens.join(' '));
    return out;
  }
  for (let i = 0; i + n <= tokens.length; i++) out.add(tokens.slice(i, i + n).join(' '));
  return out;
}

/** |A ∩ B| / |A ∪ B|; 0 for two empty sets. */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 0;
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}

const BOS = '<s>';
const EOS = '</s>';

/**
 * A word trigram language model built from the cleaned corpus itself (no pretrained model can be
 * downloaded here): Jelinek-Mercer interpolation of trigram, bigram and add-one unigram estimates,
 * with an `<unk>` class for unseen words; an unseen context hands its weight down to the lower
 * orders, so the probabilities of every next token still sum to 1. Its perplexity says how far
 * a text strays from the corpus's own word sequences, not how fluent it is in general.
 */
export class TrigramLanguageModel {
  private readonly uni = new Map<string, number>();
  private readonly bi = new Map<string, number>();
  private readonly tri = new Map<string, number>();
  private readonly ctx1 = new Map<string, number>();
  private readonly ctx2 = new Map<string, number>();
  private total = 0;

  constructor(
    texts: readonly string[],
    private readonly weights: readonly [number, number, number] = [0.6, 0.3, 0.1],
  ) {
    for (const text of texts) {
      const t = [BOS, BOS, ...tokenize(text), EOS];
      for (let i = 2; i < t.length; i++) {
        inc(this.uni, t[i]);
        inc(this.bi, `${t[i - 1]}\u0000${t[i]}`);
        inc(this.ctx1, t[i - 1]);
        inc(this.tri, `${t[i - 2]}\u0000${t[i - 1]}\u0000${t[i]}`);
        inc(this.ctx2, `${t[i - 2]}\u0000${t[i - 1]}`);
        this.total++;
      }
    }
  }

  /** P(w | u v). */
  probability(u: string, v: string, w: string): number {
    const [l3, l2, l1] = this.weights;
    const pUni = ((this.uni.get(w) ?? 0) + 1) / (this.total + this.uni.size + 1);
    const c1 = this.ctx1.get(v) ?? 0;
    const c2 = this.ctx2.get(`${u}\u0000${v}`) ?? 0;
    const pBi = c1 > 0 ? (this.bi.get(`${v}\u0000${w}`) ?? 0) / c1 : 0;
    const pTri = c2 > 0 ? (this.tri.get(`${u}\u0000${v}\u0000${w}`) ?? 0) / c2 : 0;
    if (c2 > 0) return l3 * pTri + l2 * pBi + l1 * pUni;
    if (c1 > 0) return ((l3 + l2) * pBi + l1 * pUni) / (l3 + l2 + l1);
    return pUni;
  }

  /** exp of the mean negative log-probability per token (end of text included). */
  perplexity(text: string): number {
    const t = [BOS, BOS, ...tokenize(text), EOS];
    let nll = 0;
    for (let i = 2; i < t.length; i++) nll -= Math.log(this.probability(t[i - 2], t[i - 1], t[i]));
    return Math.exp(nll / (t.length - 2));
  }
}

function inc(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
