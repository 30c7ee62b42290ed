// Sign-in: the chat platform's OAuth application and endpoints (CHAT_OAUTH_*, CHAT_API_USER_URL),
// and the real chat ids allowed into the demo environment (DEMO_ALLOWED_CHAT_IDS).
import type { Read } from './read.js';
import { parseHttpUrl } from './values.js';

export interface ChatOAuthConfig {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  authorizeUrl: string;
  tokenUrl: string;
  userUrl: string;
  proxyUrl: string | undefined;
}

/** Undefined when any of the three application values is missing (its routes answer 503). */
export function readChatOAuth(read: Read, str: (name: string) => string | undefined): ChatOAuthConfig | undefined {
  const clientId = str('CHAT_OAUTH_CLIENT_ID');
  const clientSecret = str('CHAT_OAUTH_CLIENT_SECRET');
  const redirectUri = read('CHAT_OAUTH_REDIRECT_URI', undefined, parseHttpUrl);
  const endpoints = {
    authorizeUrl: read('CHAT_OAUTH_AUTHORIZE_URL', 'https://discord.com/oauth2/authorize', parseHttpUrl),
    tokenUrl: read('CHAT_OAUTH_TOKEN_URL', 'https://discord.com/api/oauth2/token', parseHttpUrl),
    userUrl: read('CHAT_API_USER_URL', 'https://discord.com/api/users/@me', parseHttpUrl),
    proxyUrl: read('CHAT_OAUTH_PROXY_URL', undefined, parseHttpUrl),
  };
  return clientId && clientSecret && redirectUri ? { clientId, clientSecret, redirectUri, ...endpoints } : undefined;
}

export function parseChatId(raw: string): string {
  if (!/^\d{1,20}$/.test(raw)) throw new Error(`"${raw}" is not a chat id (digits only)`);
  return raw;
}
