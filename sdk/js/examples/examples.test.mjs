// Runs each framework example with a fake model (no network) whose tool
// call runs code in a real sandbox: GLASSROOM_URL and GLASSROOM_API_KEY
// name the gateway (sdk/js_test.go starts one).
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'glassroom'
import { MockLanguageModelV4 } from 'ai/test'
import { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { AIMessage } from '@langchain/core/messages'
import * as aiExample from './ai-sdk-tool.mjs'
import * as lcExample from './langchain-tool.mjs'

const sbx = await Sandbox.create()
after(() => sbx.kill())

// LangChain's fakes answer the same message every turn; an agent loop needs
// a tool call first and an answer after: a scripted fake chat model.
class ScriptedChatModel extends BaseChatModel {
  constructor(replies) {
    super({})
    this.replies = replies
    this.seen = []
  }
  _llmType() {
    return 'scripted-fake'
  }
  bindTools(tools) {
    this.boundTools = tools
    return this
  }
  async _generate(messages) {
    this.seen.push(messages.map((m) => m.content))
    const message = this.replies.shift()
    if (!message) throw new Error('the script has no more replies')
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] }
  }
}

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } }

test('Vercel AI SDK: the model calls the tool, the code runs in the sandbox', async () => {
  const model = new MockLanguageModelV4({
    doGenerate: [
      {
        content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'runCode', input: JSON.stringify({ code: 'import math\nprint("fib")\nmath.factorial(10)' }) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      },
      { content: [{ type: 'text', text: '10! is 3628800' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] },
    ],
  })
  const res = await aiExample.ask(model, sbx, 'What is 10 factorial?')
  assert.equal(res.text, '10! is 3628800')
  const results = res.steps.flatMap((s) => s.toolResults)
  assert.equal(results.length, 1)
  assert.deepEqual(results[0].output, { stdout: 'fib\n', stderr: '', result: '3628800', error: null })
  // the second model call saw the tool's result
  assert.match(JSON.stringify(model.doGenerateCalls[1].prompt), /3628800/)
})

test('LangChain.js: the model calls the tool, the code runs in the sandbox', async () => {
  const model = new ScriptedChatModel([
    new AIMessage({ content: '', tool_calls: [{ id: 'call-1', name: 'run_code', args: { code: 'x = [1, 2, 3]\nsum(x) * 7' }, type: 'tool_call' }] }),
    new AIMessage('The sum times 7 is 42'),
  ])
  const { answer, messages } = await lcExample.ask(model, sbx, 'sum of 1..3 times 7?')
  assert.equal(answer, 'The sum times 7 is 42')
  const toolMsg = messages.find((m) => m.getType?.() === 'tool' || m._getType?.() === 'tool')
  assert.ok(toolMsg, 'a ToolMessage')
  assert.deepEqual(JSON.parse(toolMsg.content), { stdout: '', stderr: '', result: '42', error: null })
  assert.equal(model.boundTools[0].name, 'run_code')
  assert.match(JSON.stringify(model.seen[1]), /42/)
  // variables persist in the sandbox between tool calls
  assert.equal((await sbx.runCode('x')).text, '[1, 2, 3]')
})
