"""A pytest-lsp client connected to `culint server`, once per client profile.

Profiles:
- ``vscode-utf16``: VS Code 1.65's capabilities: pushed diagnostics, UTF-16 positions.
- ``neovim-utf8``: Neovim 0.11's capabilities: pulled diagnostics, UTF-8 positions.
"""

import os

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

CULINT = os.environ.get("CULINT_BIN", "culint")

PROFILES = {
    "vscode-utf16": "visual-studio-code@v1.65.2",
    "neovim-utf8": "neovim@v0.11.0",
}


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[CULINT, "server"]),
    params=list(PROFILES),
)
async def client(lsp_client: LanguageClient, request):
    lsp_client.profile = request.param
    lsp_client.applied_edits = []

    # pytest-lsp keeps the latest pushed diagnostics per URI but not their version; record it,
    # so a test can wait for the diagnostics of exactly the version it produced.
    lsp_client.diagnostic_versions = {}
    features = lsp_client.protocol.fm.features
    keep_diagnostics = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record_version(params: types.PublishDiagnosticsParams):
        keep_diagnostics(params)
        lsp_client.diagnostic_versions[params.uri] = params.version

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record_version

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        lsp_client.applied_edits.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    lsp_client.registrations = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams):
        lsp_client.registrations.extend(params.registrations)

    capabilities = client_capabilities(PROFILES[request.param])
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri="file:///tmp/culint-e2e",
            # CUL2 only: rules added later must not change what these tests expect.
            initialization_options={"select": ["CUL2"]},
        )
    )
    lsp_client.encoding = result.capabilities.position_encoding
    lsp_client.pull = result.capabilities.diagnostic_provider is not None
    yield
    await lsp_client.shutdown_session()
