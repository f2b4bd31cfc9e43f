import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { installProcessGuard } from './process-guard';

describe(installProcessGuard.name, () => {
  it('logs and counts an unhandled rejection and an exception thrown from a timer, and the process lives on', async () => {
    const logged: string[] = [];
    const registry = new Registry();
    const sut = installProcessGuard({ error: (m) => logged.push(m) }, registry);
    try {
      process.emit('unhandledRejection', new Error('scrape parser blew up'), Promise.resolve());
      process.emit('uncaughtException', new TypeError('handler read undefined'));
      expect(sut.counts).toEqual({ 'unhandled-rejection': 1, 'uncaught-exception': 1 });
      expect(logged.join('\n')).toContain('scrape parser blew up');
      expect(logged.join('\n')).toContain('handler read undefined');
      const text = await registry.metrics();
      expect(text).toContain('fathom_process_faults_total{kind="unhandled-rejection"} 1');
      expect(text).toContain('fathom_process_faults_total{kind="uncaught-exception"} 1');
    } finally {
      sut.uninstall();
    }
  });

  it('keeps a real process running past a rejected promise nobody awaits and a throw in a timer', () => {
    // A child process (jest installs its own handlers): without the guard, Node exits 1 at the first fault.
    const guard = join(__dirname, 'process-guard.ts');
    const child = spawnSync(
      process.execPath,
      [
        '-e',
        `
        const swc = require('@swc/core');
        const fs = require('node:fs');
        const Module = require('node:module');
        const code = swc.transformSync(fs.readFileSync(${JSON.stringify(guard)}, 'utf8'), { filename: 'g.ts', module: { type: 'commonjs' }, jsc: { parser: { syntax: 'typescript' } } }).code;
        const m = new Module(${JSON.stringify(guard)}, module);
        m.paths = module.paths.concat(Module._nodeModulePaths(${JSON.stringify(__dirname)}));
        m._compile(code, ${JSON.stringify(guard)});
        const guardOf = m.exports.installProcessGuard({ error: (line) => console.log(line.split('\\n')[0]) });
        Promise.reject(new Error('nobody awaits me'));
        setTimeout(() => { throw new Error('thrown in a timer'); }, 5);
        setTimeout(() => { console.log('alive', JSON.stringify(guardOf.counts)); }, 50);
        `,
      ],
      { encoding: 'utf8', timeout: 10_000 },
    );
    expect(child.status).toBe(0);
    expect(child.stdout).toContain('unhandled-rejection (process kept running): Error: nobody awaits me');
    expect(child.stdout).toContain('uncaught-exception (process kept running): Error: thrown in a timer');
    expect(child.stdout).toContain('alive {"unhandled-rejection":1,"uncaught-exception":1}');
  });
});
