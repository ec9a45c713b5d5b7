/**
 * A stateless Responses request as an agent client (Codex and the like) sends it: the whole history
 * in `input`, with every kind of item the view and the normalizer must know (and some they must
 * only carry: reasoning with `encrypted_content`, a server tool call, a reference, an unknown item).
 */

export const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
export const SCREENSHOT = 'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAYAAABytg0kAAAAFklEQVR42mP8z8DwnwEIGBkZGRgYAAAdBQH/0gZjWgAAAABJRU5ErkJggg==';
export const ENCRYPTED = 'gAAAAABpVq3xR2t7c0ZkYWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=';

export function codexBody(): Record<string, unknown> {
  return {
    model: 'gpt-5-codex',
    instructions: 'You are a coding agent.',
    store: false,
    stream: true,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: 'sess-1',
    x_unknown: { keep: [1, 2, 3] },
    tools: [
      {
        type: 'function',
        name: 'shell',
        description: 'Runs a command.',
        parameters: { type: 'object', properties: { command: { type: 'array' } } },
      },
      { type: 'custom', name: 'apply_patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: x' } },
      { type: 'local_shell' },
      { type: 'computer_use_preview', display_width: 1024, display_height: 768, environment: 'browser' },
    ],
    input: [
      /* 0 */ { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Sandbox: read-only.' }] },
      /* 1 */ {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is in this screenshot?' },
          { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' },
        ],
      },
      /* 2 */ {
        type: 'reasoning',
        id: 'rs_1',
        summary: [{ type: 'summary_text', text: 'List the files first.' }],
        encrypted_content: ENCRYPTED,
      },
      /* 3 */ {
        type: 'function_call',
        id: 'fc_1',
        call_id: 'call_ls',
        name: 'shell',
        arguments: '{"command":["ls"]}',
        status: 'completed',
      },
      /* 4 */ { type: 'function_call_output', call_id: 'call_ls', output: 'README.md\nsrc/' },
      /* 5 */ {
        type: 'custom_tool_call',
        id: 'ctc_1',
        call_id: 'call_patch',
        name: 'apply_patch',
        input: '*** Begin Patch\n*** End Patch',
      },
      /* 6 */ {
        type: 'custom_tool_call_output',
        call_id: 'call_patch',
        output: [
          { type: 'input_text', text: 'Done.' },
          { type: 'input_image', image_url: 'https://example.com/diff.png', detail: 'low' },
        ],
      },
      /* 7 */ {
        type: 'local_shell_call',
        id: 'lsh_1',
        call_id: 'call_sh',
        action: { type: 'exec', command: ['pwd'], env: {} },
        status: 'completed',
      },
      /* 8 */ {
        type: 'local_shell_call_output',
        id: 'call_sh',
        output: '{"output":"/repo\\n","metadata":{"exit_code":0}}',
      },
      /* 9 */ {
        type: 'computer_call',
        id: 'cu_1',
        call_id: 'call_shot',
        action: { type: 'screenshot' },
        pending_safety_checks: [],
        status: 'completed',
      },
      /* 10 */ {
        type: 'computer_call_output',
        call_id: 'call_shot',
        output: { type: 'computer_screenshot', image_url: `data:image/png;base64,${SCREENSHOT}` },
      },
      /* 11 */ { type: 'function_call', call_id: 'call_cat', name: 'shell', arguments: '{"command":["cat","a.pdf"]}' },
      /* 12 */ {
        type: 'function_call_output',
        call_id: 'call_cat',
        output: [
          { type: 'input_image', file_id: 'file-img1', detail: 'high' },
          { type: 'input_file', file_id: 'file-pdf1' },
        ],
      },
      /* 13 */ {
        type: 'message',
        role: 'assistant',
        id: 'msg_1',
        status: 'completed',
        content: [{ type: 'output_text', text: 'The project has a README.', annotations: [], logprobs: [] }],
      },
      /* 14 */ {
        type: 'web_search_call',
        id: 'ws_1',
        status: 'completed',
        action: { type: 'search', query: 'readme conventions' },
      },
      /* 15 */ { type: 'item_reference', id: 'msg_old' },
      /* 16 */ { type: 'some_future_item', payload: { a: 1 } },
      /* 17 */ { role: 'user', content: 'And now?' },
      /* 18 */ { type: 'shell_call', call_id: 'call_sh2', action: { commands: ['ls'] } },
      /* 19 */ {
        type: 'shell_call_output',
        call_id: 'call_sh2',
        output: [{ stdout: 'a\n', stderr: '', outcome: { type: 'exit', exit_code: 0 } }],
      },
      /* 20 */ {
        type: 'apply_patch_call',
        call_id: 'call_ap',
        operation: { type: 'update_file', path: 'a.txt', diff: '@@\n-a\n+b\n' },
        status: 'completed',
      },
      /* 21 */ { type: 'apply_patch_call_output', call_id: 'call_ap', status: 'failed', output: 'patch did not apply' },
    ],
  };
}

/** The `input` items of a body built by `codexBody`. */
export function inputOf(body: Record<string, unknown>): Array<Record<string, unknown>> {
  return body.input as Array<Record<string, unknown>>;
}
