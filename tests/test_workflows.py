"""GitHub Actions 工作流（.github/workflows/）：离线检查，不需要 GitHub。

- check-jsonschema 的内置 schema（vendor.github-workflows）：每个文件都是合法的工作流；
- zizmor --offline：没有模板注入、没有未钉死的 action、没有过宽的权限……（默认的 regular 审计，零发现）；
- 几条本书自己的规定：CI 在每次 push / PR 上运行 .ci/run；Pages 只从 main 用官方 action 发布；
  v* 标签运行 make dist 并附到 Release；绝不用 pull_request_target；顶层权限为空，每个 job 写明自己要的。
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from support.book import REPO

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def load(name: str) -> dict:
    data = yaml.safe_load((REPO / ".github" / "workflows" / name).read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 把键 on 读成 True
    return data


def steps(workflow: dict) -> list[dict]:
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


def test_workflows_match_the_github_workflow_schema():
    assert [p.name for p in WORKFLOWS] == ["ci.yml", "pages.yml", "release.yml"]
    proc = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           *map(str, WORKFLOWS)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_finds_nothing_offline():
    proc = subprocess.run([str(BIN / "zizmor"), "--offline", "--no-progress", str(REPO / ".github" / "workflows")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings" in proc.stdout + proc.stderr


def test_every_action_is_pinned_to_a_commit_and_no_job_has_more_permissions_than_it_states():
    for path in WORKFLOWS:
        workflow = load(path.name)
        assert "pull_request_target" not in (workflow["on"] or {}), path.name
        assert workflow["permissions"] == {}, f"{path.name}: 顶层权限应为空，每个 job 自己声明"
        for name, job in workflow["jobs"].items():
            assert "permissions" in job, f"{path.name}:{name} 没有声明 permissions"
            assert set(job["permissions"].values()) <= {"read", "write"}
        for step in steps(workflow):
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_ci_runs_ci_run_on_push_and_pull_request_with_pip_and_execution_caches():
    ci = load("ci.yml")
    assert set(ci["on"]) == {"push", "pull_request"} and ci["on"]["push"] is None
    runs = [s.get("run", "") for s in steps(ci)]
    assert ".ci/run" in runs
    cached = [s["with"]["path"] for s in steps(ci) if s.get("uses", "").startswith("actions/cache@")]
    assert any("pip" in p for p in cached) and any("_build/.jupyter_cache" in p and ".exec-key" in p for p in cached)
    assert ci["jobs"]["test"]["permissions"] == {"contents": "read"}


def test_pages_deploys_main_with_the_official_actions():
    pages = load("pages.yml")
    assert pages["on"]["push"] == {"branches": ["main"]}
    uses = [s.get("uses", "").split("@")[0] for s in steps(pages)]
    assert "actions/upload-pages-artifact" in uses and "actions/deploy-pages" in uses
    assert "make html" in [s.get("run") for s in steps(pages)]
    assert pages["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}


def test_a_version_tag_runs_make_dist_and_attaches_dist_to_a_release():
    release = load("release.yml")
    assert release["on"] == {"push": {"tags": ["v*"]}}
    runs = " ".join(s.get("run", "") for s in steps(release))
    assert "make dist" in runs and "gh release create" in runs and "sha256sum -c SHA256SUMS" in runs
    assert not any(s.get("uses", "").startswith("actions/cache@") for s in steps(release)), "发布流程不用缓存"
    writers = [n for n, j in release["jobs"].items() if "write" in j["permissions"].values()]
    assert writers == ["release"], "只有上传 Release 的 job 有写权限"
