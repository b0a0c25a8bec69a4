#!/usr/bin/perl
# SpamAssassin's Bayes classifier driven through Mail::SpamAssassin, the library spamd and
# sa-learn are built on: one process for a whole stream (as spamd would be).
#
#   perl sa_bayes.pl CONFIGDIR < commands
#
# CONFIGDIR holds a Bayes-only configuration (init.pre loading only the Check and Bayes
# plugins, the BAYES_* rules, bayes_path). One command per line, tab-separated:
#   S <tab> - <tab> FILE        scan FILE, print the Bayes probability ("nan" when Bayes gave none)
#   L <tab> spam|ham <tab> FILE learn FILE (what sa-learn --spam / --ham does), print nothing
#   SL <tab> spam|ham <tab> FILE  scan, print, then learn (TREC immediate feedback)
# The probability is Bayes's own float ($pms->{bayes_score}), not the 4-decimal _BAYES_ tag.
use strict;
use warnings;
use Mail::SpamAssassin;

my ($config) = @ARGV;
die "usage: $0 CONFIGDIR\n" unless $config && -d $config;
my $sa = Mail::SpamAssassin->new({
    rules_filename      => $config,
    site_rules_filename => $config,
    userprefs_filename  => "$config/user_prefs",
    dont_copy_prefs     => 1,
    local_tests_only    => 1,
});
$sa->init(1);
$| = 1;
while (my $line = <STDIN>) {
    chomp $line;
    my ($command, $label, $path) = split /\t/, $line, 3;
    open my $fh, '<:raw', $path or die "$path: $!";
    my $text = do { local $/; <$fh> };
    close $fh;
    my $mail = $sa->parse($text);
    if ($command =~ /S/) {
        my $status = $sa->check($mail);
        my $p = $status->{bayes_score};
        print defined $p ? sprintf("%.17g\n", $p) : "nan\n";
        $status->finish;
    }
    if ($command =~ /L/) {
        my $status = $sa->learn($mail, undef, $label eq 'spam' ? 1 : 0, 0);
        $status->finish;
    }
    $mail->finish;
}
$sa->finish_learner;
# this process's own peak RSS (its ru_maxrss seen by the parent would include the parent's)
if (open my $status, '<', '/proc/self/status') {
    while (<$status>) { print STDERR $_ if /^VmHWM:/ }
}
