//! Helpers shared by unit tests of several modules.

use std::path::{Path, PathBuf};

/// A training run written at module level: nearly every statement starts with a name.
pub const MODULE_LEVEL: &str = r#"import os
import torch
import torch.nn as nn
import torch.nn.functional as F

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
device = torch.device("cuda")
width = 256
model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.cuda.amp.GradScaler()
targets = torch.randint(0, 10, (32,), device=device)
inputs = torch.randn(32, width, device=device)
logits = model(inputs)
loss = F.cross_entropy(logits, targets)
loss.backward()
optimizer.step()
optimizer.zero_grad()
torch.cuda.empty_cache()
del logits, loss
history = []
for step in range(100):
    batch = torch.randn(32, width, device=device)
    loss = F.cross_entropy(model(batch), targets)
    loss.backward()
    optimizer.step()
    history.append(loss)
model.eval()
scores = model(inputs)
print(scores.argmax(-1).float().mean().item())
torch.save(model.state_dict(), "model.pt")
"#;

/// Every Python file among the rule fixtures and the examples: realistic scripts, each rule's
/// findings and near misses.
pub fn python_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![root.join("tests/fixtures"), root.join("examples")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixture folder") {
            let path = entry.expect("fixture entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() > 40, "{files:?}");
    files
}
