// require('uvscope/register') (or --require / --import uvscope/register) starts the agent with the
// environment's settings for its side effect: it exports nothing.
export {};
