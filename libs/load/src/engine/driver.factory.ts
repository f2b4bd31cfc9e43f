import { secretText, type CampaignSpec, type Scenario } from '@fathom/contracts';
import { loadDataset, PromptSource, promptItemFromText, promptSourceFor } from '../dataset/prompt.source';
import { EmbeddingsDriver } from '../driver/embeddings.driver';
import { OpenAiChatDriver, type DriverOptions } from '../driver/openai-chat.driver';
import { ToolChainDriver } from '../driver/tool-chain.driver';
import { RagLayerDriver } from '../driver/rag-layer.driver';
import { AgentsWorkflowDriver } from '../driver/agents-workflow.driver';
import { AgentLoopDriver } from '../driver/agent-loop.driver';
import type { RequestDriver } from '../driver/request-outcome';
import { O200K_BASE, type TextTokenizer } from '../dataset/text.tokenizer';
import { splitToGranularity } from '../dataset/rag-granularity.util';

/** Prompts for chat/embeddings; HTTP scenarios carry their own bodies (one empty item). */
export async function promptSourceOf(
  scenario: Scenario,
  shardIndex: number,
  tokenizer: TextTokenizer = O200K_BASE,
): Promise<PromptSource> {
  if (scenario.type === 'agent-loop')
    return new PromptSource(
      scenario.tasks.map((t) => promptItemFromText(t, scenario.system, tokenizer)),
      shardIndex,
      tokenizer,
    );
  if (scenario.type === 'http' || scenario.type === 'agents')
    return new PromptSource([{ messages: [], text: '', inputTokensClient: 0 }]);
  if (scenario.type === 'tool-chain')
    return new PromptSource(
      scenario.prompts.map((p) => promptItemFromText(p)),
      shardIndex,
    );
  if (scenario.type === 'rag') {
    const texts = (await loadDataset(scenario.dataset)).map((d) => d.messages.at(-1)!.content);
    const pieces = scenario.granularity ? splitToGranularity(texts, scenario.granularity) : texts;
    if (pieces.length === 0) throw new Error(`the dataset has no ${scenario.granularity ?? 'text'} to send`);
    return new PromptSource(
      pieces.map((text) => promptItemFromText(text)),
      shardIndex,
    );
  }
  return promptSourceFor(scenario, shardIndex, tokenizer);
}

/**
 * The scenario's driver. The step-DAG driver (gRPC, WebSocket clients) and the Qdrant driver are
 * loaded on first use: their libraries cost ~140 ms to load in every engine thread, and a chat
 * run needs neither.
 */
export async function createDriver(
  spec: CampaignSpec,
  options: DriverOptions,
  source: PromptSource,
): Promise<RequestDriver> {
  const scenario = spec.scenario;
  const target = { ...spec.target, apiKey: secretText(spec.target.apiKey) };
  switch (scenario.type) {
    case 'chat':
      return new OpenAiChatDriver(scenario, target, options);
    case 'embeddings':
      return new EmbeddingsDriver(scenario, target, options, source);
    case 'http': {
      const { StepDagDriver } = await import('../driver/steps/step-dag.driver');
      return new StepDagDriver(scenario, target, options);
    }
    case 'tool-chain':
      return new ToolChainDriver(scenario, target, options);
    case 'rag':
      if (scenario.qdrant) {
        const { QdrantLayerDriver } = await import('../driver/qdrant-layer.driver');
        return new QdrantLayerDriver(
          { ...scenario, qdrant: scenario.qdrant },
          target,
          { ...options, requestTimeoutMs: spec.load.requestTimeoutMs },
          source,
        );
      }
      return new RagLayerDriver(scenario, target, options, source);
    case 'agents':
      return new AgentsWorkflowDriver(scenario, target, options);
    case 'agent-loop':
      return new AgentLoopDriver(scenario, target, options);
  }
}
