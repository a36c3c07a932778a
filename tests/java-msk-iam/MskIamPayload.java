import java.nio.charset.StandardCharsets;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.msk.auth.iam.internals.AWS4SignedPayloadGenerator;
import software.amazon.msk.auth.iam.internals.AuthenticationRequestParams;

/**
 * Prints the AWS_MSK_IAM authentication payload that the official library
 * (software.amazon.msk:aws-msk-iam-auth) makes for a broker host and fixed
 * credentials, exactly as its SASL client sends it: one JSON line.
 *
 * Arguments: host access-key-id secret-access-key session-token|- user-agent
 */
public final class MskIamPayload {
    private MskIamPayload() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: MskIamPayload host key-id secret token|- user-agent");
            System.exit(2);
        }
        AwsCredentials credentials = "-".equals(args[3])
            ? AwsBasicCredentials.create(args[1], args[2])
            : AwsSessionCredentials.create(args[1], args[2], args[3]);
        AuthenticationRequestParams params =
            AuthenticationRequestParams.create(args[0], credentials, args[4]);
        byte[] payload = new AWS4SignedPayloadGenerator().signedPayload(params);
        System.out.println(new String(payload, StandardCharsets.UTF_8));
    }
}
