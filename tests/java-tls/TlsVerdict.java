// What Java's own TLS stack (JSSE, PKIX trust manager) decides about a
// server: for each case, a TLS handshake with the endpoint identification
// Kafka's client sets (`HTTPS`, or none), printing one line per case:
//   <name> ACCEPT
//   <name> REFUSE <reason>
// Run as a source file: java TlsVerdict.java <trusted CA PEM file> <case>...
// where each case is <name>,<host>,<port>,<https|none>. The connection goes
// to 127.0.0.1:<port>; <host> is the name the certificate is checked against
// (and the SNI), as Kafka's client sets it from the broker's address.

import java.io.FileInputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

public class TlsVerdict {
    public static void main(String[] args) throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        int n = 0;
        try (FileInputStream in = new FileInputStream(args[0])) {
            for (Certificate ca : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                trust.setCertificateEntry("ca" + n++, ca);
            }
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, tmf.getTrustManagers(), null);
        for (int i = 1; i < args.length; i++) {
            String[] c = args[i].split(",");
            String name = c[0], host = c[1];
            int port = Integer.parseInt(c[2]);
            boolean https = c[3].equals("https");
            String verdict;
            try (Socket tcp = new Socket()) {
                tcp.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
                tcp.setSoTimeout(10_000);
                try (SSLSocket tls = (SSLSocket) context.getSocketFactory().createSocket(tcp, host, port, true)) {
                    SSLParameters params = tls.getSSLParameters();
                    params.setEndpointIdentificationAlgorithm(https ? "HTTPS" : "");
                    tls.setSSLParameters(params);
                    tls.startHandshake();
                    verdict = "ACCEPT";
                }
            } catch (Exception e) {
                Throwable root = e;
                while (root.getCause() != null) {
                    root = root.getCause();
                }
                verdict = ("REFUSE " + root).replace('\n', ' ');
            }
            System.out.println(name + " " + verdict);
        }
    }
}
