//! AWS MSK IAM.

use super::*;

/// Cluster B as the MSK documentation configures an IAM client.
fn msk_iam(jaas_options: &str, extra: &str) -> String {
    format!(
        "{BASE}B.security.protocol = SASL_SSL\n\
         B.sasl.mechanism = AWS_MSK_IAM\n\
         B.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required{jaas_options};\n\
         B.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n\
         {extra}"
    )
}

#[test]
fn aws_msk_iam_takes_the_iam_login_module_and_its_options() {
    let config = load(&msk_iam("", ""));
    let sasl = config.flows[0].target.sasl.clone().unwrap();
    assert_eq!(sasl.mechanism, security::SaslMechanism::AwsMskIam);
    let login = sasl.aws_iam.unwrap();
    assert!(login.default_providers && login.profile.is_none() && login.role_arn.is_none());

    let config = load(&msk_iam(
        " awsProfileName=\"prod\" awsRoleArn=\"arn:aws:iam::123456789012:role/mm2\" \
         awsRoleSessionName=\"mm2\" awsStsRegion=\"eu-west-1\" awsDebugCreds=true \
         awsRoleAccessKeyId=\"AKIDROLE\" awsRoleSecretAccessKey=\"role-Secret-81\"",
        "",
    ));
    let login = config.flows[0]
        .target
        .sasl
        .clone()
        .unwrap()
        .aws_iam
        .unwrap();
    assert_eq!(login.profile.as_deref(), Some("prod"));
    assert_eq!(
        login.role_arn.as_deref(),
        Some("arn:aws:iam::123456789012:role/mm2")
    );
    assert_eq!(login.role_session_name.as_deref(), Some("mm2"));
    assert_eq!(login.sts_region.as_deref(), Some("eu-west-1"));
    let text = render_effective_settings(&config);
    assert!(
        text.contains("profile `prod`, then role arn:aws:iam::123456789012:role/mm2 via STS"),
        "{text}"
    );
    assert!(!text.contains("role-Secret-81"), "{text}");
    assert!(!format!("{config:?}").contains("role-Secret-81"));
}

#[test]
fn aws_msk_iam_refuses_what_it_cannot_honour_naming_the_key() {
    for (options, says) in [
        (
            " awsRoleArn=\"r\" awsShouldUseFips=true",
            "awsShouldUseFips",
        ),
        (" awsMskRegionProvider=\"com.example.P\"", "Java class"),
        (" awsRoleARN=\"r\"", "`awsRoleARN` is not an option"),
        (" awsRoleSessionName=\"s\"", "need awsRoleArn"),
        (
            " awsRoleArn=\"r\" awsRoleAccessKeyId=\"AKID\"",
            "go together",
        ),
        (" awsDebugCreds=maybe", "true or false"),
    ] {
        assert_rejected(&msk_iam(options, ""), "B.sasl.jaas.config", &[says]);
    }
    // The login module must match the mechanism.
    assert_rejected(
        &msk_iam("", "").replace(
            "software.amazon.msk.auth.iam.IAMLoginModule required",
            SCRAM_JAAS.trim_end_matches(';'),
        ),
        "B.sasl.jaas.config",
        &["IAMLoginModule"],
    );
    // The IAM callback handler belongs to AWS_MSK_IAM only.
    assert_rejected(
        &format!(
            "{BASE}B.security.protocol = SASL_SSL\nB.sasl.mechanism = SCRAM-SHA-512\n\
             B.sasl.jaas.config = {SCRAM_JAAS}\n\
             B.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n"
        ),
        "B.sasl.client.callback.handler.class",
        &["AWS_MSK_IAM"],
    );
    // The library's OAUTHBEARER form: say to use AWS_MSK_IAM.
    assert_rejected(
        &format!(
            "{BASE}B.security.protocol = SASL_SSL\nB.sasl.mechanism = AWS_MSK_IAM\n\
             B.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required;\n\
             B.sasl.login.callback.handler.class = software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
        ),
        "B.sasl.login.callback.handler.class",
        &["AWS_MSK_IAM"],
    );
}

#[test]
fn msk_iams_oauthbearer_form_takes_the_iam_options_instead_of_a_token_endpoint() {
    let text = format!(
        "{BASE}B.security.protocol = SASL_SSL\n\
         B.sasl.mechanism = OAUTHBEARER\n\
         B.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
         required awsRoleArn=\"arn:aws:iam::123456789012:role/mm2\";\n\
         B.sasl.login.callback.handler.class = software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n\
         B.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
    );
    // The library's README sets the same class as the client callback
    // handler too: accepted, with OAUTHBEARER only.
    assert_rejected(
        &format!(
            "{BASE}B.security.protocol = SASL_SSL\nB.sasl.mechanism = SCRAM-SHA-512\n\
             B.sasl.jaas.config = {SCRAM_JAAS}\n\
             B.sasl.client.callback.handler.class = \
             software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n"
        ),
        "B.sasl.client.callback.handler.class",
        &["OAUTHBEARER"],
    );
    let config = load(&text);
    let sasl = config.flows[0].target.sasl.clone().unwrap();
    assert_eq!(sasl.mechanism, security::SaslMechanism::OAuthBearer);
    assert!(sasl.oauth.is_none());
    assert_eq!(
        sasl.aws_iam.unwrap().role_arn.as_deref(),
        Some("arn:aws:iam::123456789012:role/mm2")
    );
    let rendered = render_effective_settings(&config);
    assert!(rendered.contains("via STS"), "{rendered}");
}
