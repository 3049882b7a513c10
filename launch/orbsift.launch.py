"""Launch orbsift_node: `ros2 launch orbsift orbsift.launch.py [namespace:=/robot]
[image:=/camera/image_raw] [use_stereo:=true] [params_file:=/path/to.yaml]`."""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _node(context):
    share = get_package_share_directory("orbsift")
    stereo = LaunchConfiguration("use_stereo").perform(context).lower() in ("true", "1")
    params_file = LaunchConfiguration("params_file").perform(context) or os.path.join(
        share, "config", "stereo.yaml" if stereo else "orb.yaml"
    )
    if stereo:
        remappings = [
            ("left/image", LaunchConfiguration("left_image")),
            ("right/image", LaunchConfiguration("right_image")),
        ]
    else:
        remappings = [("image", LaunchConfiguration("image"))]
    return [
        Node(
            package="orbsift",
            executable="orbsift_node",
            name="orbsift",
            namespace=LaunchConfiguration("namespace"),
            parameters=[params_file],
            remappings=remappings,
            additional_env=_fastdds_profile_env(share),
            output="screen",
        )
    ]


def _fastdds_profile_env(share):
    """Fast DDS (the rmw of the r2r node) reads its profile from this variable: the package's
    large-data profile when it ships one, unless the user has chosen a profile already."""
    profile = os.path.join(share, "config", "fastdds-large-data.xml")
    if "FASTRTPS_DEFAULT_PROFILES_FILE" in os.environ or not os.path.isfile(profile):
        return {}
    return {"FASTRTPS_DEFAULT_PROFILES_FILE": profile}


def generate_launch_description():
    return LaunchDescription(
        [
            DeclareLaunchArgument("namespace", default_value="", description="node namespace"),
            DeclareLaunchArgument("use_stereo", default_value="false",
                                  description="match left/image against right/image"),
            DeclareLaunchArgument("params_file", default_value="",
                                  description="parameter file (default: config/orb.yaml or stereo.yaml)"),
            DeclareLaunchArgument("image", default_value="image", description="mono image topic"),
            DeclareLaunchArgument("left_image", default_value="left/image"),
            DeclareLaunchArgument("right_image", default_value="right/image"),
            OpaqueFunction(function=_node),
        ]
    )
