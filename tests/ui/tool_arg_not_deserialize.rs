// A parameter the model fills must be Deserialize and JsonSchema: one
// error, at its type, saying so.
use state_agent::tool;

struct Secret(u8);

/// Opens a vault.
#[tool]
fn open(code: Secret) -> String {
    code.0.to_string()
}

fn main() {}
