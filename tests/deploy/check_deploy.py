#!/usr/bin/env python3
"""Checks of what operators deploy: the Kubernetes manifest, the alert rules and the dashboard.

  check_deploy.py manifest <matchmesh.yaml> <alerts.yml> <node/main.cpp>
      the manifest parses and holds the objects and fields a hardened deployment needs, passes
      the node only flags it has, and the memory alert's bound is 85% of its memory limit
  check_deploy.py gateway <gateway.yaml> <node/gateway/main.cpp>
      the gateway's manifest: a hardened Deployment passing only flags the gateway has, sending
      players to the nodes' client Service, behind an Ingress that terminates TLS
  check_deploy.py promtool <promtool> check|test rules <file>
      runs `promtool check rules` on the rules or `promtool test rules` on their tests (fails,
      saying how to get promtool, when it is absent)
  check_deploy.py rules <alerts.yml>
      every rule has a severity, a summary and a description
  check_deploy.py metrics <matchmesh> <matchmesh-cli> <grafana-dashboard.json> <alerts.yml>
      every metric the dashboard's and the rules' PromQL names is exported by a live node, with
      the labels the expressions select or group by (two real nodes on loopback, a match served,
      two starts refused and frames rejected, so that labelled families appear)

Exit 0 when the check passes, 1 with one line per problem otherwise.
"""

import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml


def fail(problems):
    for problem in problems:
        print(f"check_deploy: {problem}", file=sys.stderr)
    sys.exit(1 if problems else 0)


# ---- the manifest -------------------------------------------------------------------------------

def by_kind(documents):
    objects = {}
    for document in documents:
        if document:
            objects.setdefault(document["kind"], []).append(document)
    return objects


def memory_bytes(quantity):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(quantity[: -len(suffix)]) * factor
    return int(quantity)


def check_statefulset(statefulset, problems):
    spec = statefulset["spec"]["template"]["spec"]
    pod_security = spec.get("securityContext", {})
    if pod_security.get("runAsNonRoot") is not True:
        problems.append("the pod does not set runAsNonRoot")
    if not isinstance(pod_security.get("runAsUser"), int) or pod_security["runAsUser"] == 0:
        problems.append("the pod has no fixed non-root runAsUser")
    if not isinstance(pod_security.get("runAsGroup"), int) or pod_security["runAsGroup"] == 0:
        problems.append("the pod has no fixed non-root runAsGroup")
    if pod_security.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        problems.append("the pod's seccompProfile is not RuntimeDefault")
    keys = {c.get("topologyKey") for c in spec.get("topologySpreadConstraints", [])}
    for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone"):
        if key not in keys:
            problems.append(f"no topologySpreadConstraint over {key}")
    (container,) = spec["containers"]
    security = container.get("securityContext", {})
    if security.get("allowPrivilegeEscalation") is not False:
        problems.append("the container allows privilege escalation")
    if security.get("readOnlyRootFilesystem") is not True:
        problems.append("the container's root file system is writable")
    if security.get("capabilities", {}).get("drop") != ["ALL"]:
        problems.append("the container does not drop ALL capabilities")
    resources = container.get("resources", {})
    for kind in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            if resource not in resources.get(kind, {}):
                problems.append(f"no {kind}.{resource} for the container")
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    if ports != {"mesh": 7100, "client": 7200, "admin": 7300}:
        problems.append(f"container ports {ports}, not mesh 7100, client 7200, admin 7300")
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
           for e in container.get("env", [])}
    if env.get("POD_NAMESPACE") != "metadata.namespace":
        problems.append("no POD_NAMESPACE from the downward API")
    args = dict(a.removeprefix("--").split("=", 1) for a in container["args"])
    service = statefulset["spec"]["serviceName"]
    expected = {
        "seeds": f"{service}.$(POD_NAMESPACE).svc.cluster.local:7100",
        "admin-listen": "0.0.0.0:7300",
        "mesh-listen": "0.0.0.0:7100",
        "client-listen": "0.0.0.0:7200",
    }
    for flag, value in expected.items():
        if args.get(flag) != value:
            problems.append(f"--{flag} is {args.get(flag)!r}, not {value!r}")
    for probe in ("readinessProbe", "livenessProbe"):
        if container.get(probe, {}).get("httpGet", {}).get("port") != "admin":
            problems.append(f"the {probe} does not ask the admin port")
    return container


def node_flags(source):
    """The long options node/main.cpp declares."""
    with open(source, encoding="utf-8") as file:
        return set(re.findall(r'add_option\("--([a-z-]+)"', file.read()))


def check_network_policy(policy, labels, problems):
    spec = policy["spec"]
    if spec.get("podSelector", {}).get("matchLabels") != labels:
        problems.append("the NetworkPolicy does not select the StatefulSet's pods")
    rules = {}
    for rule in spec.get("ingress", []):
        for port in rule.get("ports", []):
            rules[port["port"]] = rule.get("from")
    mesh_from = rules.get(7100)
    if mesh_from != [{"podSelector": {"matchLabels": labels}}]:
        problems.append(f"the mesh port admits {mesh_from}, not only the StatefulSet's pods")
    if 7200 not in rules or rules[7200] is not None:
        problems.append("the client port is not open to everyone")
    if 7300 not in rules or not rules[7300]:
        problems.append("the admin port has no rule, or is open to everyone")


def check_manifest(manifest_path, rules_path, main_source):
    with open(manifest_path, encoding="utf-8") as file:
        objects = by_kind(yaml.safe_load_all(file))
    problems = []
    for kind in ("ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget", "NetworkPolicy"):
        if kind not in objects:
            problems.append(f"no {kind}")
    if problems:
        fail(problems)
    (statefulset,) = objects["StatefulSet"]
    labels = statefulset["spec"]["selector"]["matchLabels"]
    container = check_statefulset(statefulset, problems)
    flags = node_flags(main_source)
    for argument in container["args"]:
        flag = argument.removeprefix("--").split("=", 1)[0]
        if flag not in flags:
            problems.append(f"the node has no flag --{flag} (node/main.cpp)")
    (budget,) = objects["PodDisruptionBudget"]
    if budget["spec"].get("maxUnavailable") != 1:
        problems.append("the PodDisruptionBudget does not allow exactly one pod down")
    if budget["spec"].get("selector", {}).get("matchLabels") != labels:
        problems.append("the PodDisruptionBudget does not select the StatefulSet's pods")
    (policy,) = objects["NetworkPolicy"]
    check_network_policy(policy, labels, problems)
    service = statefulset["spec"]["serviceName"]
    peers = [s for s in objects["Service"] if s["metadata"]["name"] == service]
    if len(peers) != 1 or peers[0]["spec"].get("clusterIP") != "None":
        problems.append("the StatefulSet's serviceName is not a headless Service")
    text = json.dumps(objects)
    if "9100" in text or ".default.svc" in text:
        problems.append("the manifest still names port 9100 or the default namespace")
    limit = memory_bytes(container["resources"]["limits"]["memory"])
    alert = rule_named(load_rules(rules_path), "MatchmeshMemoryNearLimit")
    bound = re.search(r">\s*0\.85\s*\*\s*(\d+)", alert["expr"]) if alert else None
    if not bound or int(bound.group(1)) != limit:
        problems.append(f"MatchmeshMemoryNearLimit is not 0.85 * {limit} (the manifest's limit)")
    fail(problems)


def check_gateway(manifest_path, main_source):
    with open(manifest_path, encoding="utf-8") as file:
        objects = by_kind(yaml.safe_load_all(file))
    problems = [f"no {kind}" for kind in ("Service", "Deployment", "Ingress") if kind not in objects]
    if problems:
        fail(problems)
    (deployment,) = objects["Deployment"]
    (service,) = objects["Service"]
    (ingress,) = objects["Ingress"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    if spec.get("securityContext", {}).get("runAsNonRoot") is not True:
        problems.append("the gateway may run as root")
    hardening = container.get("securityContext", {})
    if hardening.get("readOnlyRootFilesystem") is not True or hardening.get(
            "allowPrivilegeEscalation") is not False or hardening.get(
            "capabilities", {}).get("drop") != ["ALL"]:
        problems.append("the gateway's container is not locked down")
    flags = node_flags(main_source)
    args = {}
    for argument in container["args"]:
        flag, _, value = argument.removeprefix("--").partition("=")
        args[flag] = value
        if flag not in flags:
            problems.append(f"the gateway has no flag --{flag} (node/gateway/main.cpp)")
    if not args.get("nodes", "").startswith("matchmesh-clients."):
        problems.append("the gateway does not send players to the matchmesh-clients Service")
    if not args.get("allow-origin"):
        problems.append("no --allow-origin: no page may connect")
    if service["spec"]["selector"] != deployment["spec"]["selector"]["matchLabels"]:
        problems.append("the gateway's Service does not select its pods")
    rules = ingress["spec"].get("rules", [])
    hosts = {rule.get("host") for rule in rules}
    tls_hosts = {host for entry in ingress["spec"].get("tls", []) for host in entry.get("hosts", [])}
    if not tls_hosts or not hosts <= tls_hosts:
        problems.append("the Ingress does not terminate TLS for every host it serves")
    backends = {path["backend"]["service"]["name"] for rule in rules
                for path in rule["http"]["paths"]}
    if backends != {service["metadata"]["name"]}:
        problems.append("the Ingress does not lead to the gateway's Service")
    fail(problems)


# ---- the rules ----------------------------------------------------------------------------------

def load_rules(path):
    with open(path, encoding="utf-8") as file:
        groups = yaml.safe_load(file)["groups"]
    return [rule for group in groups for rule in group["rules"]]


def rule_named(rules, name):
    return next((rule for rule in rules if rule.get("alert") == name), None)


def check_rules(path):
    problems = []
    rules = load_rules(path)
    if not rules:
        problems.append("no rules")
    for rule in rules:
        name = rule.get("alert", rule.get("record"))
        if rule.get("labels", {}).get("severity") not in ("critical", "warning", "info"):
            problems.append(f"{name}: no severity (critical, warning or info)")
        for annotation in ("summary", "description"):
            if not rule.get("annotations", {}).get(annotation):
                problems.append(f"{name}: no {annotation}")
    fail(problems)


def check_promtool(promtool, command, kind, path):
    if not os.access(promtool, os.X_OK):
        fail([f"no promtool at {promtool}: run `scripts/setup.sh --with-tests` in this checkout, "
              "which puts it there"])
    # promtool test rules finds the rule files relative to the test file.
    path = os.path.abspath(path)
    result = subprocess.run([promtool, command, kind, os.path.basename(path)],
                            cwd=os.path.dirname(path),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(result.stdout, end="")
    fail([] if result.returncode == 0 else
         [f"promtool {command} {kind} {path} exited {result.returncode}"])


# ---- PromQL: the metric names and labels an expression uses --------------------------------------

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan"}
# Series Prometheus makes for every target, not the node.
SCRAPE_SERIES = {"up"}
# Labels Prometheus puts on every series it scrapes.
TARGET_LABELS = {"job", "instance"}


def strip_strings(expression):
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)


def selectors(expression):
    """(metric name, label names matched) for every series selector in `expression`."""
    text = strip_strings(expression)
    text = re.sub(r"\$\{?\w+\}?", "", text)  # dashboard variables ($__rate_interval, ${job})
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"\b\d+(\.\d+)?([eE][+-]?\d+|[smhdwy]+)?\b", "", text)  # numbers, durations
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    found = []
    for match in re.finditer(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?", text):
        name, matchers, call = match.groups()
        if call or name.lower() in KEYWORDS:
            continue
        labels = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", matchers or ""))
        found.append((name, labels))
    return found


def grouping_labels(expression):
    labels = set()
    text = strip_strings(expression)
    for group in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", text):
        labels.update(label.strip() for label in group.split(",") if label.strip())
    return labels


def dashboard_expressions(path):
    with open(path, encoding="utf-8") as file:
        dashboard = json.load(file)
    expressions = []
    panels = list(dashboard["panels"])
    while panels:
        panel = panels.pop()
        panels.extend(panel.get("panels", []))
        for target in panel.get("targets", []):
            expressions.append((f"dashboard panel '{panel['title']}'", target["expr"]))
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        if isinstance(query, dict):
            query = query.get("query", "")
        match = re.match(r"label_values\((.*),\s*\w+\)$", query or "")
        if variable.get("type") == "query" and match:
            expressions.append((f"dashboard variable {variable['name']}", match.group(1)))
    return expressions


def rule_expressions(path):
    return [(f"rule {rule.get('alert', rule.get('record'))}", rule["expr"])
            for rule in load_rules(path)]


# ---- a live node's metrics ---------------------------------------------------------------------

def parse_exposition(text):
    """{family: (type, set of label names)} from Prometheus text output."""
    families = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            families[name] = (kind, set())
    for line in text.splitlines():
        match = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s", line)
        if not match or line.startswith("#"):
            continue
        name, labels = match.groups()
        family = name
        if family not in families:
            family = re.sub(r"_(bucket|sum|count)$", "", name)
        if family in families:
            families[family][1].update(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', labels or ""))
    return families


def family_of(name, families):
    if name in families:
        return name
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    if base != name and families.get(base, ("",))[0] in ("histogram", "summary"):
        return base
    return None


class Node:
    def __init__(self, binary, folder, name, config, seeds):
        self.out = os.path.join(folder, f"{name}.out")
        self.log = os.path.join(folder, f"{name}.log")
        arguments = [binary, "--config", config, "--id", name, "--mesh-listen", "127.0.0.1:0",
                     "--client-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"]
        if seeds:
            arguments += ["--seeds", seeds]
        with open(self.out, "w") as out, open(self.log, "w") as log:
            self.process = subprocess.Popen(arguments, stdout=out, stderr=log,
                                            stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(self.out) as out:
                match = re.search(r"ready: mesh (\S+) client (\S+) admin (\S+)", out.read())
            if match:
                self.mesh, self.client, self.admin = match.groups()
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        with open(self.log) as log:
            raise RuntimeError(f"node {name} did not get ready: {log.read()[-2000:]}")

    def metrics(self):
        with urllib.request.urlopen(f"http://{self.admin}/metrics", timeout=5) as reply:
            return reply.read().decode()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def eventually(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def sample(text, name):
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def send_oversized_frame(address):
    """A frame header claiming 4 GiB: the node rejects the frame and closes the connection."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(struct.pack("<IHH", 0xFFFFFFF8, 1, 0))
        connection.settimeout(5)
        try:
            while connection.recv(4096):
                pass
        except OSError:
            pass


NODE_CONFIG = """{"cluster": {"name": "deploy-check", "secret": "deploy-check-secret-0123456789",
             "heartbeatIntervalMs": 100, "deadAfterMs": 800},
 "matching": {"distributionRate": 50, "profiles": {"Duel": {"rank": 100}}},
 "ticketTypes": {"1": {"name": "duel", "profiles": ["Duel"], "maxMembers": 2,
                       "properties": {"rank": {"value": "rating", "searchSpread": 200}},
                       "values": {"rating": {"required": true, "min": 0, "max": 5000}}}}}
"""


def exercise(nodes, cli):
    """A match across the two nodes, two refused starts and a rejected frame on each port."""
    players = []
    for node, user in zip(nodes, ("alice", "bob")):
        players.append(subprocess.Popen([cli, "--node", node.client, "--user", user, "start", "1",
                                         "--value", "rating=1500", "--wait", "20"],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True))
        time.sleep(0.5)  # the second finds the first one's room
    outputs = [player.communicate(timeout=30)[0] for player in players]
    if any(player.returncode != 0 for player in players):
        raise RuntimeError(f"the two players were not matched: {outputs}")
    for refusal in (["1", "--value", "rating=9999"], ["99"]):  # out of range; no such type
        refused = subprocess.run([cli, "--node", nodes[0].client, "--user", "carol", "start",
                                  *refusal, "--wait", "5"], capture_output=True, text=True,
                                 timeout=30)
        if refused.returncode != 1:
            raise RuntimeError(f"start {refusal} was not refused: {refused.stdout}")
    send_oversized_frame(nodes[0].client)
    send_oversized_frame(nodes[0].mesh)
    # The metrics follow the node's counters once a second.
    time.sleep(2.5)


def exported_families(binary, cli):
    with tempfile.TemporaryDirectory(prefix="check_deploy.") as folder:
        config = os.path.join(folder, "cluster.json")
        with open(config, "w") as file:
            file.write(NODE_CONFIG)
        nodes = []
        try:
            nodes.append(Node(binary, folder, "node-a", config, None))
            nodes.append(Node(binary, folder, "node-b", config, nodes[0].mesh))
            if not eventually(lambda: all(sample(n.metrics(), "matchmesh_members_alive") == 2
                                          for n in nodes), 10):
                raise RuntimeError("the two nodes did not see each other")
            exercise(nodes, cli)
            return parse_exposition(nodes[0].metrics())
        finally:
            for node in nodes:
                node.stop()


def check_metrics(binary, cli, dashboard_path, rules_path):
    expressions = dashboard_expressions(dashboard_path) + rule_expressions(rules_path)
    families = exported_families(binary, cli)
    problems = []
    missing = set()
    for where, expression in expressions:
        known_labels = set(TARGET_LABELS) | {"le"}
        for name, labels in selectors(expression):
            if name in SCRAPE_SERIES:
                continue
            family = family_of(name, families)
            if family is None:
                missing.add(name)
                problems.append(f"{where}: the node exports no {name}")
                continue
            known_labels |= families[family][1]
            for label in labels - families[family][1] - TARGET_LABELS:
                problems.append(f"{where}: {family} has no label {label}")
        for label in grouping_labels(expression) - known_labels:
            problems.append(f"{where}: no metric in the expression has the label {label}")
    if missing:
        problems.append(f"missing metrics: {', '.join(sorted(missing))}")
    print(f"check_deploy: {len(expressions)} expressions, "
          f"{len(families)} families exported by the node")
    fail(problems)


def main(arguments):
    commands = {
        "manifest": (check_manifest, 3),
        "gateway": (check_gateway, 2),
        "promtool": (check_promtool, 4),
        "rules": (check_rules, 1),
        "metrics": (check_metrics, 4),
    }
    if not arguments or arguments[0] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    function, count = commands[arguments[0]]
    if len(arguments) != count + 1:
        print(__doc__, file=sys.stderr)
        return 2
    function(*arguments[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
