"""The README's Layout table and module graph describe the code as it is: the graph is the
package's own (`scripts/module-graph`), and every directory under Sources/ has its row."""
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_layout_and_module_graph_match_the_package():
    result = subprocess.run([str(ROOT / "scripts" / "module-graph"), "--check"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
