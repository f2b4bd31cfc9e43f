import { RETRIEVED_DOCUMENT_LIMITS } from '@fathom/contracts';
import { topDocumentTexts } from './request-outcome';
import { retrievedTexts } from './rag-layer.driver';

describe(topDocumentTexts.name, () => {
  it('keeps the texts of the top 3 ranks, cut to 512 characters, and leaves text-less ranks out', () => {
    const long = 'y'.repeat(RETRIEVED_DOCUMENT_LIMITS.maxChars + 1);
    expect(topDocumentTexts(['a', null, long, 'd', 'e'])).toEqual(['a', long.slice(0, 512)]);
    expect(topDocumentTexts(['a', 'b', 'c', 'd'])).toEqual(['a', 'b', 'c']);
    expect(topDocumentTexts([])).toEqual([]);
  });
});

describe(retrievedTexts.name, () => {
  it('reads retrieve results by text, content, document or payload.text, in rank order', () => {
    const answer = {
      results: [
        { id: 1, text: 'first' },
        { content: 'second' },
        { payload: { text: 'third' } },
        { text: 'fourth' },
      ],
    };
    expect(retrievedTexts(answer)).toEqual(['first', 'second', 'third']);
    expect(retrievedTexts({ results: [{ document: 'only' }, 7, null] })).toEqual(['only']);
  });

  it('maps rerank results to the documents sent, best relevance first', () => {
    const sent = ['d0', 'd1', 'd2', 'd3'];
    const answer = {
      results: [
        { index: 2, relevance_score: 0.4 },
        { index: 0, relevance_score: 0.9 },
        { index: 3, relevance_score: 0.1 },
        { index: 1, relevance_score: 0.6 },
      ],
    };
    expect(retrievedTexts(answer, sent)).toEqual(['d0', 'd1', 'd2']);
    // Without scores the server's order is the ranking; an index outside what was sent is no text.
    expect(retrievedTexts({ results: [{ index: 3 }, { index: 9 }, { index: 1 }] }, sent)).toEqual([
      'd3',
      'd1',
    ]);
  });
});
