/**
 * deploy/monitoring/prometheusrule.yaml with Debian's promtool: the rules check (expressions, durations,
 * annotation templates), and the unit tests of test/monitoring/alerts.promtool.yaml pass; every alert is
 * shown there both firing and quiet, and has its section in docs/runbook.md. A real Prometheus evaluates
 * the same rules against a live ferryd in prometheus.test.ts.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { execa } from 'execa';
import { expect, test } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { ROOT } from '../fixtures/paths';
import { alertRules, githubAnchors, ruleGroups } from '../fixtures/prometheus';
import { useTmpDir } from '../fixtures/tmp';

const PROMTOOL_TESTS = join(ROOT, 'test', 'monitoring', 'alerts.promtool.yaml');

interface PromtoolTests {
  rule_files: string[];
  tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
}

test('the PrometheusRule passes promtool check rules and test rules, each alert firing and quiet', async (t) => {
  const monitoring = join(ROOT, 'deploy', 'monitoring');
  const manifest = parseYaml(readFileSync(join(monitoring, 'prometheusrule.yaml'), 'utf8'));
  expect(() => new PrometheusRule(manifest).validate()).not.toThrow();
  const kustomization = parseYaml(readFileSync(join(monitoring, 'kustomization.yaml'), 'utf8')) as {
    resources: string[];
  };
  expect(kustomization.resources).toContain('prometheusrule.yaml');

  const dir = useTmpDir(t, 'promtool');
  const groups = ruleGroups();
  writeFileSync(join(dir, 'full.yaml'), stringify({ groups }));
  const check = await execa('promtool', ['check', 'rules', join(dir, 'full.yaml')], { reject: false, all: true });
  expect(check.exitCode, check.all).toBe(0);
  const alerts = alertRules();
  expect(check.all).toContain(`SUCCESS: ${alerts.length} rules found`);

  // promtool compares annotations whole; their templates are what check rules parsed above.
  const bare = groups.map((g) => ({ ...g, rules: g.rules.map(({ annotations: _, ...r }) => r) }));
  const tests = parseYaml(readFileSync(PROMTOOL_TESTS, 'utf8')) as PromtoolTests;
  expect(tests.rule_files).toEqual(['ferry-rules.yaml']);
  writeFileSync(join(dir, 'ferry-rules.yaml'), stringify({ groups: bare }));
  copyFileSync(PROMTOOL_TESTS, join(dir, 'alerts.promtool.yaml'));
  const run = await execa('promtool', ['test', 'rules', join(dir, 'alerts.promtool.yaml')], {
    reject: false,
    all: true,
  });
  expect(run.exitCode, run.all).toBe(0);
  expect(run.all).toContain('SUCCESS');

  const evaluations = tests.tests.flatMap((x) => x.alert_rule_test ?? []);
  for (const { alert } of alerts) {
    const mine = evaluations.filter((e) => e.alertname === alert);
    expect(
      mine.some((e) => e.exp_alerts.length > 0),
      `${alert}: no promtool test where it fires`,
    ).toBe(true);
    expect(
      mine.some((e) => e.exp_alerts.length === 0),
      `${alert}: no promtool test where it stays quiet`,
    ).toBe(true);
  }
  // And no test of an alert that is not in the rules (a renamed alert would pass as "quiet").
  expect(new Set(evaluations.map((e) => e.alertname))).toEqual(new Set(alerts.map((a) => a.alert)));
});

test('every alert says what happened and links its section of docs/runbook.md', () => {
  const anchors = githubAnchors(readFileSync(join(ROOT, 'docs', 'runbook.md'), 'utf8'));
  for (const { alert, labels, annotations } of alertRules()) {
    expect(['critical', 'warning'], alert).toContain(labels?.severity);
    expect(annotations?.summary, alert).toBeTruthy();
    expect(annotations?.description, alert).toBeTruthy();
    expect(annotations?.runbook_url, alert).toBe(`docs/runbook.md#${alert.toLowerCase()}`);
    expect(anchors, `docs/runbook.md has no section ${alert}`).toContain(alert.toLowerCase());
  }
});
