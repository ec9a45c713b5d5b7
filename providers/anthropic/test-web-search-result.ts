/**
 * A web search result block as the Messages API sends it (encrypted content and all): the request
 * tests find it in a client's history, the stream tests in a streamed answer.
 */
export const webSearchResult = {
  type: 'web_search_tool_result',
  tool_use_id: 'srvtoolu_1',
  content: [
    {
      type: 'web_search_result',
      url: 'https://example.com/oda',
      title: 'Oda',
      encrypted_content: 'EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2U',
      page_age: null,
    },
  ],
};
