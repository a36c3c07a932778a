import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.security.auth.callback.Callback;
import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerTokenCallback;

import software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler;

/**
 * Prints the OAUTHBEARER token that the official MSK IAM library's login
 * callback handler makes, on one line, then its lifetime in milliseconds
 * since the epoch. Credentials and region come from the environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION),
 * as the handler's default chains read them.
 */
public final class MskIamOAuthToken {
    private MskIamOAuthToken() {}

    public static void main(String[] args) throws Exception {
        IAMOAuthBearerLoginCallbackHandler handler = new IAMOAuthBearerLoginCallbackHandler();
        Map<String, String> options = new HashMap<>();
        List<AppConfigurationEntry> jaas = Collections.singletonList(new AppConfigurationEntry(
            OAuthBearerLoginModule.class.getCanonicalName(),
            AppConfigurationEntry.LoginModuleControlFlag.REQUIRED,
            options));
        handler.configure(Collections.emptyMap(), "OAUTHBEARER", jaas);
        OAuthBearerTokenCallback callback = new OAuthBearerTokenCallback();
        handler.handle(new Callback[] {callback});
        System.out.println(callback.token().value());
        System.out.println(callback.token().lifetimeMs());
        handler.close();
    }
}
