#!/usr/bin/env node
// Static checks of the deployment files, for machines without Docker:
//   node deploy/verify.js
// - docker-compose.yml and every YAML under deploy/ parse; dashboards are valid JSON;
// - kafka-init creates exactly the topics of libs/contracts/src/topics.ts;
// - every vllm:* / DCGM_FI_* name the rules and dashboards use is one the sim exposes
//   (libs/sim/src/metrics), or a legacy vLLM name the rules accept with `or`;
// - the shadow-gateway service sets only variables `fathom shadow gateway` reads.
// `npm test` runs it (test/deploy/deploy-verify.spec.ts), so the files cannot drift from the code.
// `promtool check config` / `promtool test rules deploy/prometheus/tests/*.yml` go further.
'use strict';
const { readFileSync, readdirSync, statSync } = require('node:fs');
const { join, relative } = require('node:path');
const { parse } = require('yaml');

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });

/**
 * The problems found in the deployment files under `root` (empty when all is well).
 * `composeText` replaces docker-compose.yml's text (tests feed it a drifted copy).
 */
function verifyDeploy(root = join(__dirname, '..'), { composeText } = {}) {
  const deployDir = join(root, 'deploy');
  const problems = [];
  const compose = parse(composeText ?? readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true });
  const files = walk(deployDir);
  for (const file of files.filter((f) => /\.ya?ml$/.test(f))) {
    try {
      parse(readFileSync(file, 'utf8'));
    } catch (error) {
      problems.push(`${relative(root, file)}: ${error.message}`);
    }
  }
  const dashboards = files.filter((f) => f.endsWith('.json'));
  for (const file of dashboards) {
    try {
      JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      problems.push(`${relative(root, file)}: ${error.message}`);
    }
  }

  const contractTopics = [
    ...readFileSync(join(root, 'libs/contracts/src/topics.ts'), 'utf8').matchAll(/'(fathom\.[a-z0-9.-]+\.v\d+)'/g),
  ]
    .map((m) => m[1])
    .sort();
  const initTopics = String(compose.services['kafka-init'].environment.TOPICS).split(/\s+/).filter(Boolean).sort();
  const missing = contractTopics.filter((t) => !initTopics.includes(t));
  const extra = initTopics.filter((t) => !contractTopics.includes(t));
  if (missing.length) problems.push(`kafka-init TOPICS misses ${missing.join(' ')} (libs/contracts/src/topics.ts)`);
  if (extra.length) problems.push(`kafka-init TOPICS has ${extra.join(' ')}, which libs/contracts/src/topics.ts does not`);

  const simSources = walk(join(root, 'libs/sim/src/metrics'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  const legacyVllm = ['vllm:gpu_cache_usage_perc', 'vllm:gpu_prefix_cache_hit_rate'];
  const used = new Set();
  for (const file of [join(deployDir, 'prometheus/rules/fathom.rules.yml'), ...dashboards]) {
    for (const m of readFileSync(file, 'utf8').matchAll(/\b(vllm:[a-z0-9_]+|DCGM_FI_[A-Z0-9_]+)/g)) used.add(m[1]);
  }
  for (const name of used) {
    const base = name.replace(/_(bucket|sum|count)$/, '');
    if (!simSources.includes(`'${base}'`) && !legacyVllm.includes(base))
      problems.push(`metric ${name} is not exposed by libs/sim`);
  }
  problems.push(...verifyShadowGateway(root, compose.services['shadow-gateway']));
  return { problems, topics: initTopics.length, targetMetrics: used.size, dashboards: dashboards.length };
}

/**
 * The shadow-gateway service: under profile `shadow`, scalable (no container_name), configured
 * only by variables `fathom shadow gateway` reads (SHADOW_GATEWAY_ENV in its command file), with
 * the campaign among them, and health-checked on its admin port.
 */
function verifyShadowGateway(root, service) {
  if (!service) return ['docker-compose.yml has no shadow-gateway service'];
  const problems = [];
  const source = readFileSync(join(root, 'apps/cli/src/commands/shadow.command.ts'), 'utf8');
  const block = /SHADOW_GATEWAY_ENV = \{([^}]*)\}/.exec(source);
  const cliNames = block ? [...block[1].matchAll(/'(FATHOM_[A-Z_]+)'/g)].map((m) => m[1]) : [];
  if (!cliNames.length) problems.push('apps/cli/src/commands/shadow.command.ts: SHADOW_GATEWAY_ENV not found');
  const env = service.environment ?? {};
  for (const name of Object.keys(env))
    if (!cliNames.includes(name)) problems.push(`shadow-gateway sets ${name}, which fathom shadow gateway does not read`);
  for (const name of ['FATHOM_SHADOW_CAMPAIGN', 'FATHOM_SHADOW_ADMIN_LISTEN'])
    if (!(name in env)) problems.push(`shadow-gateway does not set ${name}`);
  if (!(service.profiles ?? []).includes('shadow')) problems.push('shadow-gateway is not under profile shadow');
  if (service.container_name) problems.push('shadow-gateway has a container_name: it cannot be scaled');
  const adminPort = /:(\d+)$/.exec(String(env.FATHOM_SHADOW_ADMIN_LISTEN ?? ''))?.[1];
  const probe = service.healthcheck?.test ?? [];
  if (!probe.includes('deploy/docker/healthcheck.js') || probe.at(-1) !== adminPort)
    problems.push(`shadow-gateway's healthcheck does not probe its admin port ${adminPort}`);
  return problems;
}

module.exports = { verifyDeploy };

if (require.main === module) {
  const { problems, topics, targetMetrics, dashboards } = verifyDeploy();
  if (problems.length) {
    process.stderr.write(`deploy: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
    process.exit(1);
  }
  process.stdout.write(`deploy: ok (${topics} topics, ${targetMetrics} target metric names, ${dashboards} dashboard(s))\n`);
}
